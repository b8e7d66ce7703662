"""Training under ``accelerate launch`` with two CPU processes (gloo): sharding, weight sync and 1-process parity.

Each layout, DDP (replicated parameters) and FSDP2 (sharded parameters, with ``examples/accelerate/fsdp2.yaml``),
gets one two-process run (``distributed_run.py record``) shared by its three checks; the parity check then
replays its groups in a single process (``distributed_run.py replay``). See docs/deployment.md, *Several
training processes*, for why the comparison replays groups rather than re-sampling them.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file

from agentrl_trainer.advantages import task_normalize
from agentrl_trainer.distributed import (
    broadcast_from_main,
    holds_sharded_weights,
    shard,
    weights_checksum,
    whole_model,
)
from tests.agentrl_trainer import distributed_run

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(distributed_run.__file__)
PORTS = range(19100, 19200)  # this area's assigned range
# How `accelerate launch` is told the layout; everything else (2 CPU processes, gloo) is shared.
LAYOUTS = {
    "ddp": ["--multi_gpu"],  # the torchrun launcher; with use_cpu the processes join a gloo group on the CPU
    "fsdp2": ["--config_file", str(REPO / "examples" / "accelerate" / "fsdp2.yaml")],
}


def _free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"No free port in {PORTS.start}-{PORTS.stop - 1}.")


def _run(command: list[str], log: Path, extra_env: dict[str, str] | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "ACCELERATE_USE_CPU": "true"}
    env.update(extra_env or {})
    with log.open("w") as out:
        result = subprocess.run(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"{command[:4]} failed ({result.returncode}):\n{log.read_text()[-4000:]}")


def launch_command(layout: str, mode: str, model_dir: Path, out: Path) -> list[str]:
    """``accelerate launch`` of two CPU processes running ``distributed_run.py MODE MODEL_DIR OUT``."""
    accelerate = Path(sys.executable).with_name("accelerate")
    return [
        str(accelerate),
        "launch",
        *LAYOUTS[layout],
        "--num_processes=2",
        "--num_machines=1",
        "--mixed_precision=no",
        "--dynamo_backend=no",
        f"--main_process_port={_free_port()}",
        str(SCRIPT),
        mode,
        str(model_dir),
        str(out),
    ]


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tiny_model_path: Path) -> Path:
    """Output of a 2-process gloo run of STEPS steps, GROUPS_PER_PROCESS groups per process and step."""
    layout = request.param
    out = tmp_path_factory.mktemp(f"distributed-{layout}")
    _run(launch_command(layout, "record", tiny_model_path, out), out / "record.log")
    trained = json.loads((out / "record-layout.json").read_text())
    # The run trained in the layout asked for (FSDP2: the processes held DTensor shards, not replicas).
    expected = {"ddp": ("MULTI_CPU", "Parameter"), "fsdp2": ("FSDP", "DTensor")}[layout]
    assert (trained["distributed_type"].split(".")[-1], trained["parameter_type"]) == expected
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
    # And they are the main process's whole trained model (gathered under FSDP), on every process.
    main_final = (recorded / "record-trainer.sha256").read_text()
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
    assert curves[0]["loss"] == pytest.approx(curves[1]["loss"], abs=1e-5)  # losses near 0: float noise ~1e-6


def _broadcast_worker(rank: int, port: int, sent: dict[str, torch.Tensor], results: Any) -> None:
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        received = broadcast_from_main(sent if rank == 0 else None, main_only=True)
        layout = {name: (t.dtype, tuple(t.shape), t.device.type) for name, t in received.items()}
        results.put((rank, layout, weights_checksum(received)))
    finally:
        torch.distributed.destroy_process_group()


@pytest.mark.timeout(120)
def test_a_state_dict_only_the_main_process_holds_reaches_every_process_whole() -> None:
    # What FSDP's and ZeRO-3's gathering leaves: the whole dict on rank 0, nothing on the others.
    sent = {
        "embed.weight": torch.randn(5, 3),
        "norm.weight": torch.randn(3).to(torch.bfloat16),
        "step": torch.tensor(7),
        "empty": torch.zeros(0, 4),
    }
    # fork: the children inherit the imported torch (spawned ones took ~10 s each to import it again here).
    results = mp.get_context("fork").SimpleQueue()
    mp.start_processes(_broadcast_worker, args=(_free_port(), sent, results), nprocs=2, start_method="fork")
    got = [results.get() for _ in range(2)]
    layouts = {rank: layout for rank, layout, _ in got}
    checksums = {rank: checksum for rank, _, checksum in got}
    expected = {name: (t.dtype, tuple(t.shape), "cpu") for name, t in sent.items()}
    assert layouts == {0: expected, 1: expected}
    assert checksums == {0: weights_checksum(sent), 1: weights_checksum(sent)}


def test_broadcast_from_main_without_other_processes_and_without_a_dict() -> None:
    weights = {"w": torch.ones(2)}
    # One process: the main process's gathered dict is already the result (no copy).
    assert broadcast_from_main(weights, main_only=True)["w"] is weights["w"]
    with pytest.raises(ValueError, match="main process has no state dict"):
        broadcast_from_main(None, main_only=True)
    with pytest.raises(ValueError, match="unless main_only=True"):
        broadcast_from_main(None)
    # Replicated weights (DDP): a copy, so engines never alias the training parameters.
    copied = broadcast_from_main(weights)
    assert copied["w"] is not weights["w"] and torch.equal(copied["w"], weights["w"])


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


@pytest.mark.parametrize(
    ("distributed_type", "deepspeed_config", "sharded"),
    [
        ("MULTI_CPU", None, False),
        ("MULTI_GPU", None, False),
        ("FSDP", None, True),
        ("DEEPSPEED", {"zero_optimization": {"stage": 2}}, False),
        ("DEEPSPEED", {"zero_optimization": {"stage": 3}}, True),
        ("DEEPSPEED", {"zero_optimization": {"stage": 1}, "tensor_parallel": {"autotp_size": 2}}, True),
    ],
)
def test_which_layouts_hold_sharded_weights(distributed_type: str, deepspeed_config: Any, sharded: bool) -> None:
    from accelerate.utils import DistributedType

    accelerator = SimpleNamespace(distributed_type=DistributedType[distributed_type], deepspeed_config=deepspeed_config)
    assert holds_sharded_weights(accelerator) is sharded  # type: ignore[arg-type]


def test_whole_model_holds_the_gathered_weights_and_refuses_foreign_ones(model: Any) -> None:
    weights = {name: torch.randn_like(t) for name, t in model.state_dict().items()}
    # Tied lm_head/embed_tokens: gathering may name the tensor once; the copy ties it back.
    del weights["lm_head.weight"]
    whole = whole_model(model.config, weights)
    assert type(whole) is type(model) and whole is not model
    assert weights_checksum(whole.state_dict()) == weights_checksum(
        {**weights, "lm_head.weight": weights["model.embed_tokens.weight"]}
    )
    assert str(model.config.dtype).endswith("float32")  # the trainer's config is left alone
    with pytest.raises(RuntimeError, match=r"missing \['model.norm.weight'\]"):
        whole_model(model.config, {k: v for k, v in weights.items() if k != "model.norm.weight"})
    with pytest.raises(RuntimeError, match="unexpected"):
        whole_model(model.config, {**weights, "extra.weight": torch.zeros(1)})
