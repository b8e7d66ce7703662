"""Sandbox latency: episode start (reset) and one ``bash_action`` round trip, per backend, side by side.

Variants: ``bwrap-pool`` and ``docker-pool`` (the OS task's default: a sandbox leased from a warm
``SandboxPool`` of 2 per image, started and its shell ready; the used one is closed in the background),
``bwrap-cold`` (a bubblewrap sandbox started per episode), ``docker-cold`` (``docker run`` and
``docker exec`` per episode), and ``bwrap-broker`` and ``docker-broker`` (the same warm pool of 2, owned by a
sandbox broker process and leased over its Unix socket, as the controller's worker processes of a task lease
it: every reset and every command crosses one more local hop). Reset is the time from asking the backend for a
sandbox to a shell that answers; the round trip is one ``echo`` through the shell as the OS task's
``bash_action`` runs it. Closing is not timed (a pool does it in the background; cold, the episode's end pays it).

Each variant is measured ``--runs`` times (a new backend each run); the table shows the median over the
runs of each figure and, in brackets, its lowest and highest run. The load average is printed beside them
(the figures move with it on a shared machine).

    uv run python bench/sandbox.py                        # all variants, 3 runs of 50 resets each
    uv run python bench/sandbox.py --variants bwrap-pool --resets 200 --runs 5
    uv run python bench/sandbox.py --variants bwrap-broker,docker-broker   # reset through the broker

Needs root (bwrap) and a running Docker engine with env_images/os/build done (docker variants).
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
from collections.abc import Callable
from typing import Any

from _stats import percentile  # bench/ is on sys.path when a benchmark runs as a script
from agentrl_envs.sandboxes.base import SandboxBackend
from agentrl_envs.sandboxes.broker import start_broker, stop_broker
from agentrl_envs.sandboxes.broker_client import BrokerBackend
from agentrl_envs.sandboxes.options import SandboxOptions, open_sandboxes
from agentrl_envs.sandboxes.pool import PoolSettings


class _Brokered(BrokerBackend):
    """A backend leasing from a broker process this benchmark started; ``close`` stops the broker."""

    def __init__(self, name: str) -> None:
        options = SandboxOptions(backend=name, pool=PoolSettings(images=["default"]))
        self._dir = tempfile.TemporaryDirectory(prefix="bench-broker-")
        self._process, ready = start_broker(options, os.path.join(self._dir.name, "b.sock"))
        super().__init__(ready.path, name=ready.name, limits=ready.limits)

    def close(self) -> None:
        stop_broker(self._process)
        self._dir.cleanup()


# label -> how to make its backend
VARIANTS: dict[str, Callable[[], SandboxBackend]] = {
    "bwrap-pool": lambda: open_sandboxes(SandboxOptions(backend="bwrap")),
    "bwrap-cold": lambda: open_sandboxes(SandboxOptions(backend="bwrap", pool=None)),
    "docker-pool": lambda: open_sandboxes(SandboxOptions(backend="docker")),
    "docker-cold": lambda: open_sandboxes(SandboxOptions(backend="docker", pool=None)),
    "bwrap-broker": lambda: _Brokered("bwrap"),
    "docker-broker": lambda: _Brokered("docker"),
}
FIGURES = ("reset_p50_ms", "reset_p99_ms", "bash_p50_ms", "bash_p99_ms")
ROUND_TRIPS = 5
"""``bash_action`` round trips timed per reset."""


def measure(variant: str, *, resets: int, pause_s: float) -> dict[str, Any]:
    """Start ``resets`` sandboxes of the default image one after another and time them."""
    backend = VARIANTS[variant]()
    reset_ms: list[float] = []
    step_ms: list[float] = []
    try:
        backend.open("default").close()  # warm-up: rootfs unpacked, image present, pool filling
        time.sleep(max(pause_s, 2.0))
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
    parser.add_argument("--runs", type=int, default=3, help="runs per variant (medians and spread over them)")
    args = parser.parse_args()

    results = []
    for variant in args.variants.split(","):
        if variant not in VARIANTS:
            raise SystemExit(f"sandbox: unknown variant {variant!r}; known: {', '.join(VARIANTS)}")
        runs = []
        for _ in range(args.runs):
            load = os.getloadavg()[0]
            runs.append({**measure(variant, resets=args.resets, pause_s=args.pause), "load_1m": round(load, 1)})
        summary: dict[str, Any] = {"variant": variant, "resets": args.resets, "runs": runs}
        for key in (*FIGURES, "load_1m"):
            values = [run[key] for run in runs]
            summary[key] = {"median": statistics.median(values), "min": min(values), "max": max(values)}
        results.append(summary)

    header = ["variant", "resets x runs", *FIGURES, "load_1m"]
    print(" | ".join(header))
    for row in results:
        cells = [f"{row[key]['median']:g} [{row[key]['min']:g}-{row[key]['max']:g}]" for key in (*FIGURES, "load_1m")]
        print(" | ".join([row["variant"], f"{row['resets']} x {len(row['runs'])}", *cells]))
    machine = {"python": platform.python_version(), "machine": platform.machine(), "cpus": _cpus()}
    print(json.dumps({"bench": "sandbox", "machine": machine, "results": results}))


def _cpus() -> int:
    return len(os.sched_getaffinity(0))


if __name__ == "__main__":
    main()
