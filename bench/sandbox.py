"""Sandbox latency: episode start (reset) and one ``bash_action`` round trip, per backend, side by side.

Variants: ``bwrap`` (a fresh bubblewrap sandbox per episode), ``docker-pool`` (a container leased from the
warm pool, its shell started) and ``docker-cold`` (``docker run`` per episode, no pool). Reset is the time
from asking the backend for a sandbox to a shell that answers; the round trip is one ``echo`` through the
shell as the OS task's ``bash_action`` runs it. Closing is not timed (the pool refills in the background).

    uv run python bench/sandbox.py                        # all variants, 50 resets each
    uv run python bench/sandbox.py --variants bwrap --resets 200

Needs root (bwrap) and a running Docker engine with env_images/os/build done (docker variants).
Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Callable
from typing import Any

from _stats import percentile  # bench/ is on sys.path when a benchmark runs as a script
from agentrl_envs.sandboxes.base import SandboxBackend
from agentrl_envs.tasks.os.backends import make_backend

# label -> how to make its backend
VARIANTS: dict[str, Callable[[], SandboxBackend]] = {
    "bwrap": lambda: make_backend("bwrap"),
    "docker-pool": lambda: make_backend("docker", pool_size=2),
    "docker-cold": lambda: make_backend("docker", pool_size=0),
}
ROUND_TRIPS = 5
"""``bash_action`` round trips timed per reset."""


def measure(variant: str, *, resets: int, pause_s: float) -> dict[str, Any]:
    """Start ``resets`` sandboxes of the default image one after another and time them."""
    backend = VARIANTS[variant]()
    reset_ms: list[float] = []
    step_ms: list[float] = []
    try:
        backend.open("default").close()  # warm-up: rootfs unpacked, image present, pool filling
        time.sleep(pause_s)
        for _ in range(resets):
            started = time.perf_counter()
            sandbox = backend.open("default")
            reset_ms.append((time.perf_counter() - started) * 1000)
            try:
                for _ in range(ROUND_TRIPS):
                    started = time.perf_counter()
                    sandbox.run_shell("echo hello")
                    step_ms.append((time.perf_counter() - started) * 1000)
            finally:
                sandbox.close()
            time.sleep(pause_s)  # an episode's length: lets a warm pool refill as it would between episodes
    finally:
        backend.close()
    return {
        "variant": variant,
        "resets": resets,
        "reset_p50_ms": percentile(reset_ms, 50),
        "reset_p99_ms": percentile(reset_ms, 99),
        "bash_p50_ms": percentile(step_ms, 50),
        "bash_p99_ms": percentile(step_ms, 99),
    }


def main() -> None:
    """Measure the chosen variants and print the table and the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated: bwrap, docker-pool, docker-cold"
    )
    parser.add_argument("--resets", type=int, default=50, help="sandboxes started per variant")
    parser.add_argument("--pause", type=float, default=0.5, help="seconds between episodes (pool refill time)")
    args = parser.parse_args()

    results = []
    for variant in args.variants.split(","):
        if variant not in VARIANTS:
            raise SystemExit(f"sandbox: unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        results.append(measure(variant, resets=args.resets, pause_s=args.pause))

    header = ["variant", "resets", "reset_p50_ms", "reset_p99_ms", "bash_p50_ms", "bash_p99_ms"]
    print(" | ".join(header))
    for row in results:
        print(" | ".join(str(row[key]) for key in header))
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": _cpus()}
    print(json.dumps({"bench": "sandbox", "machine": machine, "results": results}))


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    main()
