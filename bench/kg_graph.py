"""Offline KG graphs: build time per split (from an empty cache), size, and distractor figures.

    uv run python bench/kg_graph.py                    # test, dev, train
    uv run python bench/kg_graph.py --virtuoso         # also Virtuoso: load time, per-tool step latency

Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.tasks.kg import build
from agentrl_envs.tasks.kg.stats import graph_stats


def step_latency(split: str, url: str) -> dict[str, float]:
    """p50 of the oracle's steps on Virtuoso, per tool that queries (``answer``: the final answer's query)."""
    from agentrl_envs.core.oracle import load_oracle
    from agentrl_envs.tasks.kg.env import KGEnv

    env, oracle = KGEnv(split=split, sparql_url=url, rules="lenient"), load_oracle("kg", split=split)
    times: dict[str, list[float]] = {"get_relations": [], "get_attributes": [], "answer": []}
    try:
        for index in range(min(env.num_samples(), 150)):
            observation, _ = env.reset(options={"index": index})
            oracle.begin(index)
            done = False
            while not done:
                action = oracle.act(observation)
                calls = action.get("tool_calls") or []
                tool = calls[0]["function"]["name"] if calls else "answer"
                started = time.perf_counter()
                observation, _, terminated, truncated, _ = env.step(action)
                if tool in times:
                    times[tool].append((time.perf_counter() - started) * 1000)
                done = terminated or truncated
    finally:
        env.close()
    return {f"virtuoso_{tool}_p50_ms": round(statistics.median(ms), 2) for tool, ms in times.items() if ms}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", default="test,dev,train", help="comma-separated splits")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--virtuoso", action="store_true", help="also time Virtuoso: loading, and oracle steps")
    args = parser.parse_args()

    data = DataRoot.find()  # $AGENTRL_DATA_ROOT
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="agentrl-kg-bench-") as cache:
        os.environ["AGENTRL_CACHE_DIR"] = cache  # an empty cache: every split is built, not read
        server = None
        if args.virtuoso:
            from agentrl_envs.tasks.kg.virtuoso import VirtuosoServer

            server = VirtuosoServer().start()
        try:
            for split in args.splits.split(","):
                started = time.perf_counter()
                graphs = build.load_offline_graphs(data, split, seed=args.seed)
                build_s = time.perf_counter() - started
                build._load.cache_clear()
                started = time.perf_counter()
                build.load_offline_graphs(data, split, seed=args.seed)
                cached_s = time.perf_counter() - started
                row = {"build_s": round(build_s, 2), "cached_load_s": round(cached_s, 2)}
                if server is not None:
                    row["virtuoso_load_s"] = round(server.load(split, graphs.graphs), 2)
                    row |= step_latency(split, server.url)
                results.append(graph_stats(data, split, seed=args.seed).as_dict() | row)
        finally:
            if server is not None:
                server.stop()

    header = list(results[0])
    print(" | ".join(header))
    for row in results:
        print(" | ".join(str(row[key]) for key in header))
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": len(os.sched_getaffinity(0))}
    print(json.dumps({"bench": "kg_graph", "machine": machine, "results": results}))


if __name__ == "__main__":
    main()
