"""Reset and step latency of the in-process environments, per task and backend.

The oracle plays each sampled episode, so every step is a real tool call on the real backend; only the
env's own ``reset``/``step`` calls are timed (the oracle's thinking is not). Each task lists the option sets
(backends) it is measured with in ``VARIANTS``; a task added to the registry adds a line there.

    uv run python bench/env_step.py                      # every task with an oracle
    uv run python bench/env_step.py --tasks db --episodes 100

Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import time
from dataclasses import dataclass, field
from typing import Any

import agentrl_envs
from _stats import percentile  # bench/ is on sys.path when a benchmark runs as a script
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.core.registry import TASKS

# Option sets each task is measured with: a label and the kwargs given to both the env and the oracle.
VARIANTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "db": [("sqlite", {"backend": "sqlite"}), ("mariadb", {"backend": "mariadb"})],
    "webshop": [("generated", {"backend": "generated"})],
    "kg": [("inprocess", {"backend": "inprocess"}), ("virtuoso", {"backend": "virtuoso"})],
    "os": [("bwrap", {"backend": "bwrap"}), ("docker", {"backend": "docker"})],
    "alfworld": [("process", {}), ("inline", {"engine": "inline"})],
}


@dataclass
class Figures:
    """Latency figures of one task variant, in milliseconds."""

    task: str
    variant: str
    episodes: int
    steps: int
    reset_ms: list[float] = field(default_factory=list, repr=False)
    step_ms: list[float] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        """p50/p99 of reset and step latency."""
        return {
            "task": self.task,
            "variant": self.variant,
            "episodes": self.episodes,
            "steps": self.steps,
            "reset_p50_ms": percentile(self.reset_ms, 50),
            "reset_p99_ms": percentile(self.reset_ms, 99),
            "step_p50_ms": percentile(self.step_ms, 50),
            "step_p99_ms": percentile(self.step_ms, 99),
        }


def measure(task: str, variant: str, options: dict[str, Any], *, episodes: int, seed: int) -> Figures:
    """Play ``episodes`` oracle episodes of the test split and time every reset and step."""
    env = agentrl_envs.make(task, split="test", **options)
    oracle = load_oracle(task, split="test", **options)
    try:
        indices = random.Random(seed).sample(range(env.unwrapped.num_samples()), episodes)
        figures = Figures(task=task, variant=variant, episodes=episodes, steps=0)
        env.reset(options={"index": indices[0]})  # warm-up: backend start, caches
        for index in indices:
            oracle.begin(index)
            started = time.perf_counter()
            observation, _ = env.reset(options={"index": index})
            figures.reset_ms.append((time.perf_counter() - started) * 1000)
            done = False
            while not done:
                action = oracle.act(observation)
                started = time.perf_counter()
                observation, _, terminated, truncated, _ = env.step(action)
                figures.step_ms.append((time.perf_counter() - started) * 1000)
                done = terminated or truncated
        figures.steps = len(figures.step_ms)
        return figures
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(VARIANTS), help="comma-separated short task names")
    parser.add_argument("--variants", default="", help="comma-separated variant labels to keep (default: all)")
    parser.add_argument("--episodes", type=int, default=50, help="episodes per task variant")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    wanted = {name for name in args.variants.split(",") if name}
    results = []
    for task in args.tasks.split(","):
        if task not in VARIANTS or TASKS[task].oracle is None:
            raise SystemExit(f"env_step: no benchmark for task {task!r}; known: {', '.join(VARIANTS)}")
        for variant, options in VARIANTS[task]:
            if wanted and variant not in wanted:
                continue
            figures = measure(task, variant, options, episodes=args.episodes, seed=args.seed)
            results.append(figures.summary())

    header = ["task", "variant", "episodes", "steps", "reset_p50_ms", "reset_p99_ms", "step_p50_ms", "step_p99_ms"]
    print(" | ".join(header))
    for row in results:
        print(" | ".join(str(row[key]) for key in header))
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": _cpus()}
    print(json.dumps({"bench": "env_step", "machine": machine, "results": results}))


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    main()
