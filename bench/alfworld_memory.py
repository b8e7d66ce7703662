"""Memory of one long-lived ALFWorld environment: resident set size over many oracle episodes.

Upstream builds a new TextWorld environment per episode and its workers grow until restarted; ours reuses
one engine. This plays ``--episodes`` oracle episodes on one env (cycling through the split's games) and
records the RSS of the process and its descendants (forkserver, engine process) at checkpoints, so growth
from 10 to 500 episodes can be read off.

    uv run python bench/alfworld_memory.py --episodes 500                   # engine in recycled processes
    uv run python bench/alfworld_memory.py --episodes 500 --engine inline   # engine in this process

Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import time
from pathlib import Path

import agentrl_envs
from agentrl_envs.core.oracle import load_oracle


def rss_kib(pid: int) -> int:
    """One process's resident set size in KiB (Linux ``/proc``; 0 if it has gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except FileNotFoundError:
        pass
    return 0


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (the engine process and the forkserver it was forked from)."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except FileNotFoundError:
            continue
        for child in children:
            pids += tree(int(child))
    return pids


def rss_mib() -> float:
    """Resident set size of this process and its descendants, in MiB."""
    return round(sum(rss_kib(pid) for pid in tree(os.getpid())) / 1024, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=500)
    parser.add_argument("--split", default="test")
    parser.add_argument("--stride", type=int, default=1, help="play games 0, stride, 2*stride, ... (cycling)")
    parser.add_argument("--engine", default="process", choices=["process", "inline"], help="env engine mode")
    parser.add_argument("--recycle-after", type=int, default=20, help="episodes per engine process")
    parser.add_argument("--checkpoints", default="10,50,100,250,500", help="episode counts at which RSS is read")
    args = parser.parse_args()
    checkpoints = sorted({int(c) for c in args.checkpoints.split(",") if int(c) <= args.episodes} | {args.episodes})

    env = agentrl_envs.make("alfworld", split=args.split, engine=args.engine, recycle_after=args.recycle_after)
    oracle = load_oracle("alfworld", split=args.split)
    total = env.unwrapped.num_samples()
    rows, wins, started = [], 0, time.perf_counter()
    try:
        for episode in range(1, args.episodes + 1):
            index = ((episode - 1) * args.stride) % total
            oracle.begin(index)
            observation, _ = env.reset(options={"index": index})
            done = False
            while not done:
                observation, reward, terminated, truncated, _ = env.step(oracle.act(observation))
                done = terminated or truncated
            wins += reward == 1.0
            if episode in checkpoints:
                gc.collect()
                elapsed = round(time.perf_counter() - started)
                rows.append({"episodes": episode, "rss_mib": rss_mib(), "elapsed_s": elapsed})
                print(f"{episode:>5} episodes: RSS {rows[-1]['rss_mib']} MiB", flush=True)
    finally:
        env.close()
    base = next(r["rss_mib"] for r in rows if r["episodes"] >= min(10, args.episodes))
    growth = round(100 * (rows[-1]["rss_mib"] - base) / base, 1)
    print("episodes | rss_mib | elapsed_s")
    for row in rows:
        print(f"{row['episodes']} | {row['rss_mib']} | {row['elapsed_s']}")
    machine = {"python": platform.python_version(), "machine": platform.machine()}
    result = {
        "engine": args.engine,
        "recycle_after": args.recycle_after,
        "split": args.split,
        "stride": args.stride,
        "episodes": args.episodes,
        "wins": wins,
        "checkpoints": rows,
        "growth_pct_from_10": growth,
    }
    print(json.dumps({"bench": "alfworld_memory", "machine": machine, "results": result}))


if __name__ == "__main__":
    main()
