"""Oracle and random agent on BFCL's full multi-turn set, per category, in BFCL's terms and ours.

The oracle plays each entry's ground-truth calls (``agentrl_envs.tasks.bfcl.oracle``), the random agent
random text or random calls of the entry's tools (seeded per episode); both go through ``agentrl-eval``'s
runner, so the figures are what ``agentrl-eval --tasks bfcl --agent oracle|random`` reports. Entries the
oracle fails are listed with BFCL's error type.

    uv run python bench/bfcl_baselines.py                  # 4 x 200 entries, both agents
    uv run python bench/bfcl_baselines.py --limit 20 --agents oracle

Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from typing import Any

from agentrl_envs.core.registry import TASK_GROUPS
from agentrl_envs.eval.agents import OracleAgent, RandomAgent
from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.eval.report import summarize
from agentrl_envs.eval.runner import Evaluation, TaskPlan
from agentrl_envs.tasks.bfcl.fetch import BFCL_WHEEL


def run(
    agent: str, limit: int | None, concurrency: int, seed: int
) -> tuple[dict[str, Any], list[EpisodeRecord], float]:
    plans = [TaskPlan(task, "test", {}, None, limit) for task in TASK_GROUPS["bfcl"]]

    def factory(task: str, split: str) -> Any:
        return OracleAgent(task, split=split) if agent == "oracle" else RandomAgent(seed=seed)

    evaluation = Evaluation(plans, factory, concurrency=concurrency)
    began = time.perf_counter()
    records = asyncio.run(evaluation.run())
    elapsed_s = time.perf_counter() - began
    return summarize(records, evaluation.planned_samples(), 1), records, elapsed_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", default="oracle,random", help="comma-separated: oracle, random")
    parser.add_argument("--limit", type=int, help="entries per category (default all 200)")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="random agent's seed")
    args = parser.parse_args()
    figures: dict[str, Any] = {"bfcl_eval": BFCL_WHEEL.version, "machine": platform.machine(), "agents": {}}
    print(f"{'agent':8} {'category':24} {'accuracy':>9} {'correct':>8} {'total':>6}")
    for agent in [a.strip() for a in args.agents.split(",") if a.strip()]:
        results, records, elapsed_s = run(agent, args.limit, args.concurrency, args.seed)
        bfcl = results["bfcl"]
        for category, f in bfcl.items():
            correct = f.get("correct_count", "")
            print(f"{agent:8} {category:24} {100 * f['accuracy']:8.1f}% {correct!s:>8} {f['total_count']:>6}")
        failed = sorted(
            (r.task, r.index, r.status, (r.info.get("bfcl") or {}).get("error_type")) for r in records if not r.success
        )
        if agent == "oracle":
            for task, index, status, error_type in failed:
                print(f"  oracle fails {task} {index}: {status} {error_type}")
        statuses: dict[str, dict[str, int]] = {t: f["status_counts"] for t, f in results["tasks"].items()}
        figures["agents"][agent] = {
            "bfcl": bfcl,
            "status_counts": statuses,
            "infra_errors": sum(f["infra_errors"] for f in results["tasks"].values()),
            "failed": [list(item) for item in failed] if agent == "oracle" else len(failed),
            "episodes": len(records),
            "elapsed_s": round(elapsed_s, 1),
        }
        print(f"  {agent}: {len(records)} episodes in {elapsed_s:.1f}s")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
