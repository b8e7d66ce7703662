"""The example environment of docs/envs/custom.md trained on by ``agentrl-train`` (``tasks: [module:Class]``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrl_trainer.cli import main
from tests.custom_env_doc import guess_env_module

QUICKSTART = Path(__file__).parents[2] / "examples" / "configs" / "quickstart.yaml"


@pytest.mark.slow
def test_a_two_step_run_on_the_docs_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRL_DATA_ROOT", str(tmp_path / "none"))  # the task needs no AgentBench data
    out = tmp_path / "run"
    overrides = ["tasks=[guess_env:GuessEnv]", "task_split=train", "max_steps=2", f"output_dir={out}"]
    overrides += ["tiny_corpus_samples=4", "max_turns=2", "max_new_tokens_per_turn=8", "lagged_fraction=0"]
    overrides += ["num_generations=2", "min_groups_per_step=1", "max_groups_per_step=1", "queue_size=2"]
    with guess_env_module(tmp_path / "src"):
        assert main([str(QUICKSTART), *overrides]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and list(summary["tasks"]) == ["guess_env:GuessEnv"]
    assert (out / "model.safetensors").is_file()
