from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentrl_trainer.cli import load_config, main

QUICKSTART = Path(__file__).parents[2] / "examples" / "configs" / "quickstart.yaml"


def test_quickstart_config_parses_and_overrides_apply() -> None:
    model_args, config = load_config(QUICKSTART, ["max_steps=3", "tasks=[db]", "lagged_fraction=0.5"])
    assert model_args.model_name_or_path == "tiny"
    assert config.max_steps == 3 and config.tasks == ["db"] and config.lagged_fraction == 0.5


def test_floats_in_exponent_form_are_numbers_in_the_file_and_in_overrides(tmp_path: Path) -> None:
    config_file = tmp_path / "exp.yaml"
    config_file.write_text(QUICKSTART.read_text() + "\nlearning_rate: 3e-4\n")  # YAML 1.1 would read a string
    assert load_config(config_file)[1].learning_rate == 3e-4
    _, config = load_config(QUICKSTART, ["learning_rate=5e-4", "beta=1E-2", "output_dir=1e3x"])
    assert config.learning_rate == 5e-4 and config.beta == 0.01 and config.output_dir == "1e3x"


def test_unknown_keys_and_bad_overrides_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match=re.escape("not KEY=VALUE")):
        load_config(QUICKSTART, ["max_steps"])
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks: [db]\nmax_stepz: 3\n")
    assert main([str(bad)]) == 2
    assert "max_stepz" in capsys.readouterr().err


@pytest.mark.slow
def test_quickstart_trains_on_the_db_task_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "run"
    code = main([str(QUICKSTART), "max_steps=2", "tasks=[db]", f"output_dir={out}", "tiny_corpus_samples=10"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2 and "db" in summary["tasks"]
    assert summary["stale_dropped_groups"] == 0
    assert (out / "model.safetensors").is_file() and (out / "reward.png").is_file()


@pytest.mark.slow
def test_the_trl_style_example_script_runs_a_smoke_run(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(__file__).parents[2] / "examples" / "train_agentbench.py"
    args = ["--model_name_or_path", "tiny", "--tasks", "db", "--task_split", "dev", "--max_steps", "1"]
    args += ["--tiny_corpus_samples", "10", "--max_turns", "2", "--max_new_tokens_per_turn", "8"]
    args += ["--report_to", "none", "--save_strategy", "no", "--output_dir", str(tmp_path / "run")]
    result = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "run" / "model.safetensors").is_file()


@pytest.mark.slow
def test_agentrl_sft_warms_the_quickstart_model_up_on_db_oracle_transcripts_and_reuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agentrl_trainer.cli import main_sft

    warm = tmp_path / "warm"
    args = [str(QUICKSTART), "tasks=[db]", "tiny_corpus_samples=3", f"output_dir={tmp_path / 'run'}"]
    args.append(f"sft_warmup={{max_samples_per_task: 2, max_steps: 1, output_dir: {warm}}}")
    assert main_sft(args) == 0
    first = _last_json(capsys.readouterr().out)
    assert first["reused"] is False and first["transcripts"] == 2 and first["trained_tokens"] > 0
    assert (warm / "model.safetensors").is_file() and (warm / "sft_warmup.json").is_file()
    assert main_sft(args) == 0
    captured = capsys.readouterr()
    again = _last_json(captured.out)
    assert again["reused"] is True and again["key"] == first["key"] and "SFT warm-up reused" in captured.err


def _last_json(out: str) -> dict[str, Any]:
    """The JSON report agentrl-sft prints last (Trainer's progress lines come before it on stdout)."""
    return json.loads(out[out.rindex('{\n  "model_path"') :])
