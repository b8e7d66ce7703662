"""Async pays: trajectories per second of asynchronous vs synchronous rollouts, side by side in one run.

Both modes train the same tiny model on the same task (``talk`` with a heavy-tailed Pareto step latency)
for the same number of optimizer steps:

* ``sync`` is TRL's schedule: start a batch of ``--groups`` GRPO groups, wait for every episode (the slowest
  tail included), then train; no rollout runs during the update.
* ``async`` is AgentRL's: rollouts run beside training; each step takes every complete group queued (between
  ``--groups`` and ``2 * --groups``, the dynamic batch), staleness is bounded by ``--max-staleness``.

Reports trained trajectories per second, the async/sync ratio, the trainer's idle fraction (time spent
waiting for rollouts, over the run and after the first step's pipeline fill), the staleness of the trained
groups, and how busy the policy engine was (near 100%: generation is the bottleneck).

    uv run python bench/async_vs_sync.py                    # about 3 minutes on 2 CPU cores
    uv run python bench/async_vs_sync.py --steps 12 --scale-s 0.2
    # the trainer-bound setting of docs/benchmarks.md: a costlier update, sampling in an engine process
    uv run python bench/async_vs_sync.py --hidden-size 512 --layers 4 --engine hf_process --trainer-threads 1
    # long observations (a real task's table or page in the environment's answer): training pays for them,
    # generation only prefills them
    uv run python bench/async_vs_sync.py --obs-tokens 512
    # rollouts and training on separate cores (the paper's separate hardware, in miniature)
    uv run python bench/async_vs_sync.py --hidden-size 128 --obs-tokens 512 --scale-s 0.5 --engine hf_process \
        --trainer-threads 1 --trainer-cpus 0 --engine-cpus 1
    # partial rollouts: the same, turns sampled 4 tokens at a time and resumed with new weights mid-turn
    uv run python bench/async_vs_sync.py ... --partial-chunk-tokens 4

Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from _envs import CORPUS, LatencyEnv, table_text
from agentrl_trainer import AgentRLConfig, AgentRLTrainer
from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model, load_tokenizer


def run_mode(mode: str, model_path: Path, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    LatencyEnv.reseed(args.seed)
    queue = (args.max_staleness + 1) * args.groups
    config = AgentRLConfig(
        output_dir=str(out / mode),
        tasks=["talk"],
        rollout_mode=mode,
        num_generations=args.generations,
        max_steps=args.steps,
        min_groups_per_step=args.groups,
        max_groups_per_step=args.groups if mode == "sync" else 2 * args.groups,
        queue_size=max(queue, 2 * args.groups),
        max_staleness=args.max_staleness,
        max_turns=2,
        max_new_tokens_per_turn=args.new_tokens,
        max_total_tokens=1024 + args.obs_tokens,
        rollout_engine=args.engine,
        engine_num_threads=args.engine_threads,
        engine_cpus=_cores(args.engine_cpus),
        partial_rollout_chunk_tokens=args.partial_chunk_tokens,
        learning_rate=1e-4,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        write_report=False,
        seed=args.seed,
    )
    trainer = AgentRLTrainer(
        str(model_path),
        config,
        processing_class=load_tokenizer(model_path),
        env_factories={"talk": lambda split: LatencyEnv(split=split)},
    )
    trainer.train()
    # The run's clock starts once the engines are up (an engine process takes seconds to import torch): both
    # modes pay that once, and it is not what the schedules differ in.
    wall_s = time.perf_counter() - trainer.rollouts_started
    logs = [e for e in trainer.state.log_history if "env/talk/episodes" in e]
    trajectories = sum(e["env/talk/episodes"] for e in logs)
    histogram = dict(sorted(trainer.staleness_histogram.items()))
    return {
        "mode": mode,
        "steps": trainer.state.global_step,
        "wall_s": wall_s,
        "trajectories": int(trajectories),
        "trajectories_per_s": trajectories / wall_s,
        "trainer_idle_fraction": trainer.idle_s / wall_s,
        # The first step waits for the pipeline to fill (nothing can run beside training yet); after that
        # it is the steady state the schedules differ in.
        "first_step_idle_s": trainer.first_idle_s,
        "steady_idle_fraction": (trainer.idle_s - trainer.first_idle_s) / (wall_s - trainer.first_idle_s),
        "groups_per_step": sum(e["rollout/groups_per_step"] for e in logs) / len(logs),
        # Time a step spends training (TRL's step time less the wait for rollouts), median over steps.
        "train_s_per_step": statistics.median(e["step_time"] - e["rollout/trainer_idle_s"] for e in logs),
        "staleness_max": max(histogram, default=0),
        "staleness_mean": sum(k * v for k, v in histogram.items()) / max(sum(histogram.values()), 1),
        "staleness_histogram": {str(k): v for k, v in histogram.items()},
        "stale_dropped": trainer.stale_dropped,
        # Share of the run the policy engine spent sampling: near 1, generation is the bottleneck.
        "engine_busy_fraction": trainer.sampler.policy.busy_s / wall_s,
        "engine_mean_batch": trainer.sampler.policy.requests / max(trainer.sampler.policy.batches, 1),
        # Partial rollouts: turns resumed with newer weights after a weight update landed mid-turn.
        "resumed_turns": getattr(trainer.sampler.policy, "resumed_turns", 0),
        # hf_process: the share the engine process itself spent sampling (the rest of busy is waiting for it).
        "engine_process_busy_fraction": getattr(trainer.sampler.policy, "process_busy_s", float("nan")) / wall_s,
    }


def observation(model_path: Path, tokens: int) -> str:
    """The first ``tokens`` tokens of a task-like table, as text (empty for 0)."""
    if tokens == 0:
        return ""
    tokenizer = load_tokenizer(model_path)
    ids = tokenizer(table_text(rows=tokens))["input_ids"][:tokens]
    return tokenizer.decode(ids)


def _cores(text: str) -> list[int] | None:
    """``"0,1"`` -> ``[0, 1]``; ``""`` -> ``None`` (no pinning)."""
    return [int(core) for core in text.split(",")] if text else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12, help="optimizer steps per mode")
    parser.add_argument("--groups", type=int, default=4, help="GRPO groups per step (sync) / minimum (async)")
    parser.add_argument("--generations", type=int, default=4, help="episodes per group (G)")
    parser.add_argument("--max-staleness", type=int, default=2)
    parser.add_argument("--new-tokens", type=int, default=16, help="max new tokens per turn")
    parser.add_argument("--scale-s", type=float, default=0.2, help="Pareto scale of the env step latency")
    parser.add_argument("--alpha", type=float, default=1.5, help="Pareto shape (smaller: heavier tail)")
    parser.add_argument("--hidden-size", type=int, default=64, help="tiny model width (sets the update's cost)")
    parser.add_argument("--layers", type=int, default=2, help="tiny model depth")
    parser.add_argument("--engine", default="hf", choices=["hf", "hf_process"], help="rollout engine")
    parser.add_argument("--engine-threads", type=int, default=1, help="hf_process: torch threads of the engine")
    parser.add_argument("--trainer-threads", type=int, default=0, help="torch threads of the trainer (0: default)")
    parser.add_argument(
        "--engine-cpus", default="", help="hf_process: cores of the engine processes, e.g. 1 (default: all)"
    )
    parser.add_argument(
        "--trainer-cpus", default="", help="cores of the trainer process, e.g. 0 (default: all); both modes alike"
    )
    parser.add_argument(
        "--obs-tokens",
        type=int,
        default=0,
        help="tokens of task-like text (a table) in the environment's first answer (0: two words)",
    )
    parser.add_argument(
        "--partial-chunk-tokens",
        type=int,
        default=0,
        help="partial rollouts: sample turns this many tokens at a time (0: off, whole turns)",
    )
    parser.add_argument("--modes", default="sync,async", help="modes to run, comma-separated (both for the ratio)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    LatencyEnv.scale_s, LatencyEnv.alpha = args.scale_s, args.alpha
    if args.trainer_cpus:
        # Before torch starts its threads, so that they (and the env threads) inherit the trainer's cores.
        os.sched_setaffinity(0, _cores(args.trainer_cpus))
    if args.trainer_threads:
        torch.set_num_threads(args.trainer_threads)

    # The tokenizer learns the table's words too, as a real tokenizer knows a task's vocabulary.
    corpus = [*CORPUS, table_text(rows=200)] if args.obs_tokens else CORPUS
    model_path = build_tiny_model(
        corpus,
        TinyModelSpec(
            vocab_size=384,
            hidden_size=args.hidden_size,
            intermediate_size=2 * args.hidden_size,
            num_hidden_layers=args.layers,
            seed=args.seed,
        ),
    )
    LatencyEnv.observation = observation(model_path, args.obs_tokens)
    with tempfile.TemporaryDirectory() as tmp:
        results = {mode: run_mode(mode, model_path, args, Path(tmp)) for mode in args.modes.split(",")}
    ratio = (
        results["async"]["trajectories_per_s"] / results["sync"]["trajectories_per_s"]
        if {"sync", "async"} <= set(results)
        else float("nan")
    )

    header = (
        "mode",
        "steps",
        "wall s",
        "traj",
        "traj/s",
        "idle",
        "steady idle",
        "train s/step",
        "groups/step",
        "stale max",
    )
    print("{:6} {:>5} {:>7} {:>5} {:>7} {:>6} {:>11} {:>12} {:>11} {:>9}".format(*header))
    for r in results.values():
        print(
            f"{r['mode']:6} {r['steps']:5d} {r['wall_s']:7.1f} {r['trajectories']:5d} {r['trajectories_per_s']:7.2f} "
            f"{r['trainer_idle_fraction']:6.1%} {r['steady_idle_fraction']:11.1%} {r['train_s_per_step']:12.2f} "
            f"{r['groups_per_step']:11.1f} "
            f"{r['staleness_max']:9d}"
        )
    print(f"async/sync trajectories per second: {ratio:.2f}x")
    figures = {
        "bench": "async_vs_sync",
        "machine": f"{platform.machine()} {platform.system()}",
        "config": vars(args),
        "ratio": ratio,
        **results,
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
