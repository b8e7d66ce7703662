"""Weight push across two processes: replicated parameters (DDP) vs sharded ones (FSDP2), side by side.

Two CPU processes join a gloo group and hold the same Qwen2 model. Each round times, on both layouts, what the
trainer does after an optimizer step to give every process's engines the main process's whole weights
(``agentrl_trainer.distributed.engine_weights``):

* ``ddp``: copy the state dict and broadcast every tensor from rank 0 (``broadcast_from_main``);
* ``fsdp2``: the model is sharded with ``fully_shard`` (one unit per decoder layer, as accelerate's
  ``TRANSFORMER_BASED_WRAP`` does); torch's ``get_model_state_dict`` with the options accelerate's
  ``get_state_dict`` uses (full, CPU offload, rank 0 only) gathers it, then names, shapes and dtypes and every
  tensor go out from rank 0 (``broadcast_from_main(..., main_only=True)``).

``fsdp2 gather only`` times the gathering alone. The time is rank 0's, from the first collective to the last
(both ranks then hold bit-identical weights, which the script checks). Median of ``--rounds`` rounds, the
layouts alternating within each round.

    uv run python bench/weight_push.py                              # ~17 M parameters, 5 rounds
    uv run python bench/weight_push.py --hidden 1024 --layers 8 --rounds 7

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import time
from typing import Any

import torch
import torch.multiprocessing as mp
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import fully_shard
from transformers import Qwen2Config, Qwen2ForCausalLM

from agentrl_trainer.distributed import broadcast_from_main, weights_checksum


def build_model(args: argparse.Namespace) -> Qwen2ForCausalLM:
    """The same randomly initialized model on every process (same seed)."""
    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        intermediate_size=args.hidden * 11 // 4,
        num_hidden_layers=args.layers,
        num_attention_heads=args.hidden // 64,
        num_key_value_heads=max(1, args.hidden // 256),
        tie_word_embeddings=True,
    )
    return Qwen2ForCausalLM(config)


def push_ddp(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return broadcast_from_main(model.state_dict())


def gather_fsdp2(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """accelerate's ``get_state_dict`` for FSDP2: the whole dict on rank 0, an empty one elsewhere."""
    options = StateDictOptions(full_state_dict=True, broadcast_from_rank0=True, cpu_offload=True)
    return get_model_state_dict(model, options=options)


def push_fsdp2(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    gathered = gather_fsdp2(model)
    return broadcast_from_main(gathered if torch.distributed.get_rank() == 0 else None, main_only=True)


def timed(push: Any, model: torch.nn.Module) -> tuple[float, str]:
    torch.distributed.barrier()
    started = time.perf_counter()
    weights = push(model)
    torch.distributed.barrier()
    return time.perf_counter() - started, weights_checksum(weights)


def worker(rank: int, port: int, args: argparse.Namespace, results: Any) -> None:
    torch.set_num_threads(1)
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        replicated = build_model(args)
        sharded = build_model(args)
        for layer in sharded.model.layers:
            fully_shard(layer)
        fully_shard(sharded)
        times: dict[str, list[float]] = {"ddp": [], "fsdp2": [], "fsdp2 gather only": []}
        checksums = set()
        for _ in range(args.rounds):
            for name, push, model in (("ddp", push_ddp, replicated), ("fsdp2", push_fsdp2, sharded)):
                seconds, checksum = timed(push, model)
                times[name].append(seconds)
                checksums.add(checksum)
            times["fsdp2 gather only"].append(timed(gather_fsdp2, sharded)[0])
        results.put((rank, times, sorted(checksums)))
    finally:
        torch.distributed.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    results = mp.get_context("spawn").SimpleQueue()
    mp.start_processes(worker, args=(port, args, results), nprocs=2, start_method="spawn")
    by_rank = dict((rank, (times, checksums)) for rank, times, checksums in (results.get() for _ in range(2)))
    times, checksums = by_rank[0]
    # Both layouts, on both ranks, pushed the same whole weights (same initial model, no training between).
    assert len(checksums) == 1 and by_rank[1][1] == checksums, "the pushed weights differ between layouts or ranks"
    params = sum(p.numel() for p in build_model(args).parameters())
    rounds_ms = {name: [round(v * 1000, 1) for v in values] for name, values in times.items()}
    medians = {name: statistics.median(values) for name, values in rounds_ms.items()}
    print(f"{params / 1e6:.1f} M parameters (float32), 2 processes, gloo, median of {args.rounds} rounds")
    print("| layout | push (ms) | rounds (ms) |")
    print("|---|---|---|")
    for name, values in rounds_ms.items():
        print(f"| {name} | {medians[name]:.0f} | {', '.join(f'{v:.0f}' for v in values)} |")
    print(f"fsdp2/ddp: {medians['fsdp2'] / medians['ddp']:.2f}x")
    print(json.dumps({"params": params, "median_ms": medians, "rounds_ms": rounds_ms, "args": vars(args)}))


if __name__ == "__main__":
    main()
