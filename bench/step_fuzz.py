"""The env step fuzz of issue 16 at a longer budget than CI's: every task and backend, counted.

Draws the same hostile assistant messages as ``tests/agentrl_envs/test_step_fuzz.py`` (deep nesting, numbers
with 100,000 digits, huge strings, NUL bytes, lone surrogates, wrong types, unknown and duplicated tools,
text-only replies) and steps one env per variant with each, resetting when an episode ends. Nothing is shrunk
or stopped at the first failure: every contract breach (a raise, a step past the task's limit, ``infra_error``,
a running episode answered with no message) is counted, with the first few shown.

    uv run python bench/step_fuzz.py                                   # 1000 examples per variant
    uv run python bench/step_fuzz.py --variants db-sqlite,os-bwrap --examples 5000

``db-mariadb`` starts a private MariaDB, ``kg-virtuoso`` a private Virtuoso, ``os-docker`` needs a Docker engine
with the OS images. Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md``
records).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from _stats import percentile  # bench/ is on sys.path when a benchmark runs as a script

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the strategies and variants live with the test that runs them in CI

from tests.agentrl_envs.step_fuzz import VARIANTS, Variant, actions, check_step, make_env, tool_parameters  # noqa: E402

SHOWN_PROBLEMS = 3


def fuzz(variant: Variant, examples: int) -> dict[str, Any]:
    """Run ``examples`` fuzzed steps on a fresh env of ``variant``; the figures of the run."""
    env = make_env(variant, max_rounds=10_000)
    seconds: list[float] = []
    statuses: Counter[str] = Counter()
    problems: list[str] = []
    try:
        env.reset(options={"index": 0})
        tools = tool_parameters(env.tools)

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(data=st.data())
        def run(data: st.DataObject) -> None:
            record = check_step(env, variant, data.draw(actions(tools)))
            seconds.append(record.seconds)
            statuses[record.status] += 1
            problems.extend(record.problems)

        started = time.monotonic()
        run()
        wall_s = time.monotonic() - started
    finally:
        env.close()
    return {
        "variant": variant.id,
        "examples": len(seconds),
        "wall_s": round(wall_s, 1),
        "step_p50_ms": round(percentile([s * 1000 for s in seconds], 50), 2),
        "step_p99_ms": round(percentile([s * 1000 for s in seconds], 99), 2),
        "step_max_ms": round(max(seconds) * 1000, 1),
        "limit_s": variant.limit_s,
        "statuses": dict(statuses),
        "problems": len(problems),
        "first_problems": problems[:SHOWN_PROBLEMS],
    }


def main() -> None:
    """Parse the flags, fuzz each variant, print the table and the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default=",".join(v.id for v in VARIANTS), help="comma-separated task-backend")
    parser.add_argument("--examples", type=int, default=1000, help="fuzzed steps per variant")
    args = parser.parse_args()
    chosen = [v for v in VARIANTS if v.id in args.variants.split(",")]
    unknown = set(args.variants.split(",")) - {v.id for v in VARIANTS}
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {[v.id for v in VARIANTS]}")
    rows = []
    for variant in chosen:
        rows.append(fuzz(variant, args.examples))
        row = rows[-1]
        print(
            f"{row['variant']:<18} {row['examples']:>6} steps {row['wall_s']:>7.1f} s  "
            f"p50 {row['step_p50_ms']:>8.2f} ms  p99 {row['step_p99_ms']:>9.2f} ms  max {row['step_max_ms']:>9.1f} ms  "
            f"problems {row['problems']}",
            flush=True,
        )
        for problem in row["first_problems"]:
            print(f"    {problem}", flush=True)
    total = sum(r["examples"] for r in rows)
    breaches = sum(r["problems"] for r in rows)
    print(f"{'total':<18} {total:>6} steps, {breaches} contract breaches")
    machine = {"python": platform.python_version(), "cpus": os.cpu_count()}
    print(json.dumps({"bench": "step_fuzz", "examples_per_variant": args.examples, "machine": machine, "rows": rows}))


if __name__ == "__main__":
    main()
