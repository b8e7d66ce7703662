"""``bench/sft_copy_curve.py`` saves its model at each scoring and a second run resumes training from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

REPO = Path(__file__).parents[2]


@pytest.mark.slow
def test_a_saved_run_resumes_at_its_step_with_its_optimizer_and_keeps_the_best(tmp_path: Path) -> None:
    synth = [sys.executable, "-m", "agentrl_envs.cli", "synth", "--task", "db", "--n", "4", "--seed", "0",
             "--difficulty", "1", "--out", str(tmp_path / "synth")]  # fmt: skip
    subprocess.run(synth, check=True, capture_output=True, timeout=300, cwd=REPO)
    tasks, saved = tmp_path / "synth" / "db.jsonl", tmp_path / "saved"
    common = ["--train", str(tasks), "--heldout", str(tasks), "--n-eval", "1", "--max-turns", "1",
              "--max-new-tokens", "4", "--temperature", "1", "--temperature", "1e-3", "--save", str(saved)]  # fmt: skip
    tiny = ["--set", "tasks=[db]", "--set", f"env_kwargs={{db: {{train_file: {tasks}}}}}", "--set",
            "tiny_corpus_samples=4", "--set", "tiny_hidden_size=32", "--set", "tiny_num_layers=1"]  # fmt: skip

    def run(*args: str) -> str:
        command = [sys.executable, str(REPO / "bench" / "sft_copy_curve.py"), *common, *args]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=REPO)
        assert result.returncode == 0, result.stderr[-4000:]
        return result.stdout

    # with a copy pre-training stage and copy rows mixed into the SFT steps (their code paths; the stage's effect
    # is tests/agentrl_trainer/test_copy_pretrain.py's)
    first = run(*tiny, "--set", "tiny_copy_pretrain_steps=2", "--copy-mix", "2", "--random-names", "1", "--steps", "2",
                "--eval-every", "2")  # fmt: skip
    assert "EVAL step 2 temperature 1 " in first and "EVAL step 2 temperature 0.001 " in first
    assert "COPY step 2 held-out: copied-token accuracy " in first  # copying, teacher-forced
    assert "COPY step 2 held-out, random names: copied-token accuracy " in first
    state = torch.load(saved / "last" / "train_state.pt")
    assert state["step"] == 2 and state["optimizer"]["state"]  # Adam's moments, not only the weights
    assert (saved / "best" / "model.safetensors").is_file() and (saved / "best" / "tokenizer.json").is_file()

    second = run("--checkpoint", str(saved / "last"), "--steps", "1")
    assert "resuming at step 2" in second and "EVAL step 3 temperature 1 " in second
    assert torch.load(saved / "last" / "train_state.pt")["step"] == 3
    # The resumed step trained: the last weights moved away from step 2's; "best" moves only on a higher success.
    best_step = torch.load(saved / "best" / "train_state.pt")["step"]
    last, best = load_file(saved / "last" / "model.safetensors"), load_file(saved / "best" / "model.safetensors")
    assert best_step in (2, 3)
    assert (best_step == 3) == all(torch.equal(last[k], best[k]) for k in last)
