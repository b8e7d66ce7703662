"""Training under ``accelerate launch`` with two CPU processes (gloo): sharding, weight sync and 1-process parity.

One two-process run (``distributed_run.py record``) is shared by the three checks; the parity check then replays
its groups in a single process (``distributed_run.py replay``). See docs/deployment.md, *Several training
processes*, for why the comparison replays groups rather than re-sampling them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from agentrl_trainer.advantages import task_normalize
from agentrl_trainer.distributed import shard
from tests.agentrl_trainer import distributed_run

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(distributed_run.__file__)
PORTS = range(19100, 19200)  # this area's assigned range


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"No free port in {PORTS.start}-{PORTS.stop - 1}.")


def _run(command: list[str], log: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "true"}
    with log.open("w") as out:
        result = subprocess.run(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"{command[:4]} failed ({result.returncode}):\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, tiny_model_path: Path) -> Path:
    """Output of a 2-process gloo run of STEPS steps, GROUPS_PER_PROCESS groups per process and step."""
    out = tmp_path_factory.mktemp("distributed")
    accelerate = Path(sys.executable).with_name("accelerate")
    _run(
        [
            str(accelerate),
            "launch",
            "--multi_gpu",  # the torchrun launcher; with use_cpu the processes join a gloo group on the CPU
            "--num_processes=2",
            "--num_machines=1",
            "--mixed_precision=no",
            "--dynamo_backend=no",
            f"--main_process_port={_free_port()}",
            str(SCRIPT),
            "record",
            str(tiny_model_path),
            str(out),
        ],
        out / "record.log",
    )
    return out


def _rank_logs(out: Path) -> list[list[dict[str, Any]]]:
    paths = sorted((out / "run" / "ranks").glob("rank-*.jsonl"))
    return [[json.loads(line) for line in p.read_text().splitlines()] for p in paths]


@pytest.mark.slow
@pytest.mark.timeout(600)  # the first one also pays for the shared 2-process run
def test_each_process_trains_its_own_groups_and_no_group_twice(recorded: Path) -> None:
    logs = _rank_logs(recorded)
    assert len(logs) == 2 and all(entry["world_size"] == 2 for rank in logs for entry in rank)
    per_rank = [[tuple(g) for entry in rank for g in entry["groups"]] for rank in logs]
    steps, groups = distributed_run.STEPS, distributed_run.GROUPS_PER_PROCESS
    assert [len(rows) for rows in per_rank] == [steps * groups] * 2
    everything = per_rank[0] + per_rank[1]
    # One pass over the rows: every row trained exactly once, by one process.
    assert sorted(index for _, _, index in everything) == list(range(distributed_run.SAMPLES))


@pytest.mark.slow
@pytest.mark.timeout(600)  # the first one also pays for the shared 2-process run
def test_after_every_step_every_engine_holds_the_main_process_weights(recorded: Path) -> None:
    rank0, rank1 = _rank_logs(recorded)
    assert [e["step"] for e in rank0] == [e["step"] for e in rank1] == list(range(1, distributed_run.STEPS + 1))
    for a, b in zip(rank0, rank1, strict=True):
        assert a["engine_version"] == b["engine_version"] == a["step"]
        assert a["engine_weights_sha256"] == b["engine_weights_sha256"]
    # The weights move every step (a checksum that never changed would prove nothing).
    assert len({e["engine_weights_sha256"] for e in rank0}) == distributed_run.STEPS
    # And they are the main process's trained weights, on every process.
    main_final = (recorded / "record-rank-0-trainer.sha256").read_text()
    assert rank0[-1]["engine_weights_sha256"] == rank1[-1]["engine_weights_sha256"] == main_final


@pytest.mark.slow
@pytest.mark.timeout(600)  # the first one also pays for the shared 2-process run
def test_two_processes_match_one_process_on_the_same_groups(recorded: Path, tiny_model_path: Path) -> None:
    _run([sys.executable, str(SCRIPT), "replay", str(tiny_model_path), str(recorded)], recorded / "replay.log")
    two = load_file(str(recorded / "record.safetensors"))
    one = load_file(str(recorded / "replay.safetensors"))
    from transformers import AutoModelForCausalLM

    initial = dict(AutoModelForCausalLM.from_pretrained(tiny_model_path).named_parameters())
    assert two.keys() == one.keys()
    moved = torch.cat([(two[k] - initial[k].detach()).flatten() for k in two]).norm()
    apart = torch.cat([(two[k] - one[k]).flatten() for k in two]).norm()
    assert moved > 1e-3  # training changed the model
    assert apart / moved < 1e-3, f"2-process and 1-process parameters differ: |diff| / |update| = {apart / moved:.2e}"
    curves = [json.loads((recorded / f"{mode}-curves.json").read_text()) for mode in ("record", "replay")]
    assert len(curves[0]["grad_norm"]) == len(curves[1]["grad_norm"]) == distributed_run.STEPS
    assert curves[0]["grad_norm"] == pytest.approx(curves[1]["grad_norm"], rel=1e-4)
    assert curves[0]["loss"] == pytest.approx(curves[1]["loss"], abs=1e-6)


def test_shard_deals_a_stream_round_robin() -> None:
    assert [list(shard(iter(range(7)), rank, 2)) for rank in (0, 1)] == [[0, 2, 4, 6], [1, 3, 5]]
    assert list(shard(iter(range(3)), 0, 1)) == [0, 1, 2]
    with pytest.raises(ValueError, match="rank 2"):
        shard(iter(()), 2, 2)


def test_task_normalization_over_processes_equals_one_process_on_the_whole_batch() -> None:
    torch.manual_seed(0)
    advantages = torch.randn(6, 5)
    mask = (torch.rand(6, 5) > 0.3).float()
    tasks = ["a", "b", "a", "a", "b", "a"]
    whole = task_normalize(advantages, mask, tasks)
    halves = [slice(0, 3), slice(3, 6)]
    # Two "processes": each one's all_reduce adds the other half's statistics to its own.
    stats = []
    for part in halves:
        task_normalize(
            advantages[part], mask[part], tasks[part], task_names=("a", "b"), all_reduce=lambda s: stats.append(s) or s
        )
    total = stats[0] + stats[1]
    split = torch.cat(
        [
            task_normalize(advantages[p], mask[p], tasks[p], task_names=("a", "b"), all_reduce=lambda s: total)
            for p in halves
        ]
    )
    assert torch.allclose(split, whole, atol=1e-6)
    # Without the reduction each half would be normalized on its own, which differs.
    alone = torch.cat([task_normalize(advantages[p], mask[p], tasks[p]) for p in halves])
    assert not torch.allclose(alone, whole, atol=1e-3)
