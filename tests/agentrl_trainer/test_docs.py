from __future__ import annotations

from dataclasses import MISSING, fields
from pathlib import Path

from trl import GRPOConfig

import agentrl_trainer
from agentrl_trainer import AgentRLConfig

DOCS = Path(__file__).parents[2] / "docs" / "training.md"


def test_the_config_reference_lists_every_agentrl_field_with_its_help() -> None:
    text = DOCS.read_text()
    trl_fields = {f.name for f in fields(GRPOConfig)}
    for f in fields(AgentRLConfig):
        if f.name in trl_fields:
            continue
        default = f.default_factory() if f.default_factory is not MISSING else f.default  # type: ignore[misc]
        assert f"| `{f.name}` | `{default!r}` | {f.metadata['help']} |" in text, f.name


def test_public_names_are_exported_and_sorted() -> None:
    assert agentrl_trainer.__all__ == sorted(agentrl_trainer.__all__)
    for name in agentrl_trainer.__all__:
        assert hasattr(agentrl_trainer, name)


def test_the_sft_warmup_reference_lists_every_key_with_its_help() -> None:
    from agentrl_trainer.sft.config import SFTWarmupConfig

    text = DOCS.read_text()
    for f in fields(SFTWarmupConfig):
        default = f.default_factory() if f.default_factory is not MISSING else f.default  # type: ignore[misc]
        assert f"| `{f.name}` | `{default!r}` | {f.metadata['help']} |" in text, f.name


def test_the_stage_eval_reference_lists_every_key_with_its_help() -> None:
    from agentrl_trainer.stages import StageEvalConfig

    text = DOCS.read_text()
    for f in fields(StageEvalConfig):
        default = f.default_factory() if f.default_factory is not MISSING else f.default  # type: ignore[misc]
        assert f"| `{f.name}` | `{default!r}` | {f.metadata['help']} |" in text, f.name
