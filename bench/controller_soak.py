"""Soak: many concurrent episodes through the controller while worker processes are killed at random.

``--sessions`` episode loops run for ``--minutes``: each starts a no-op session, interacts a few times and
finishes it (``noop(finish=true)``, reward 1). Every ``--kill-every`` seconds (on average) one local worker is
killed with SIGKILL; its sessions must end as ``task error`` and the supervisor must restart it. At the end
the client's own counts are checked against the controller's ``/metrics``: no completed episode lost or counted
twice, every session id used once, no request answered with a 5xx or cut off. RSS (controller and workers) is
sampled throughout to show it stays flat.

``--task db`` (private MariaDB server per worker) or ``--task os`` (a bwrap sandbox per episode) play real
episodes instead of no-ops (``SELECT 1`` or ``echo`` steps, then an answer). ``--hand-off`` serves envs that run
every reset, step and close on a new thread that has exited before the next call
(``bench/handoff_envs.py``), as a thread pool that retires idle workers would; task errors are counted by cause
(``worker lost`` for the kills, the env's error otherwise), so an episode lost to the hand-off shows.

    uv run python bench/controller_soak.py --minutes 10 --sessions 500
    uv run python bench/controller_soak.py --minutes 5 --sessions 40 --task db --hand-off

Prints a table and, last, one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))

from controller_load import action, controller, tree_rss_mb  # noqa: E402


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": function}],
    }


FINISH = _call("noop", {"finish": True})
TASKS: dict[str, dict[str, Any]] = {
    "noop": {
        "config": {"name": "noop", "env": "agentrl_controller.workers.noop:NoopEnv"},
        "handoff": "handoff_envs:HandoffNoop",
        "step": action("noop"),
        "finish": FINISH,
    },
    "db": {
        "config": {"name": "dbbench-std", "env": "db", "options": {"backend": "mariadb"}},
        "handoff": "handoff_envs:HandoffDB",
        "step": action("db"),
        "finish": _call("commit_final_answer", {"answers": ["0"]}),
    },
    "os": {
        "config": {"name": "os-std", "env": "os", "options": {"backend": "bwrap"}},
        "handoff": "handoff_envs:HandoffOS",
        "step": _call("bash_action", {"script": "echo soak"}),
        "finish": _call("answer_action", {"answer": "0"}),
    },
}
"""Per ``--task``: the controller's task config, its hand-off env class, a step and the message that ends it."""
BENCH = Path(__file__).resolve().parent


def task_config(task: str, *, hand_off: bool) -> dict[str, Any]:
    """The controller's config of ``task``, with the hand-off env class in place of the env if asked."""
    config = dict(TASKS[task]["config"])
    if hand_off:
        config["env"] = TASKS[task]["handoff"]
    return config


def finished_counts(metrics: str) -> Counter[str]:
    """``controller_sessions_finished_total`` by status (the soak serves one task), from the Prometheus text."""
    counts: Counter[str] = Counter()
    for match in re.finditer(
        r'^controller_sessions_finished_total\{status="([^"]+)",task="[^"]+"\} (\S+)$', metrics, re.M
    ):
        counts[match.group(1)] += int(float(match.group(2)))
    return counts


def error_cause(out: dict[str, Any]) -> str:
    """Why a ``task error`` ended: ``worker lost`` (a kill) or the env's own error, without ids and paths."""
    metrics = out.get("metrics") or out.get("metric") or {}
    error = str(metrics.get("error") or "no error given")
    if error.startswith("worker lost"):
        return "worker lost"
    return re.sub(r"[0-9a-f]{6,}|/\S+", "*", error)[:100]


async def soak(base: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    """Run the episode loops, the killer and the RSS sampler; return the figures."""
    root = base.removesuffix("/api/")
    client_counts: Counter[str] = Counter()
    error_causes: Counter[str] = Counter()
    task = TASKS[getattr(args, "task", "noop")]
    session_ids: list[int] = []
    failures: Counter[str] = Counter()
    kills: list[int] = []
    rss: list[tuple[float, float]] = []
    began = time.monotonic()
    deadline = began + args.minutes * 60
    rng = random.Random(args.seed)
    connector = aiohttp.TCPConnector(limit=args.in_flight)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None)) as http:

        async def post(path: str, **kwargs: Any) -> tuple[int, Any, Any]:
            async with http.post(base + path, **kwargs) as response:
                return response.status, response.headers, await response.json()

        def count(out: dict[str, Any]) -> None:
            client_counts[out["status"]] += 1
            if out["status"] == "task error":
                error_causes[error_cause(out)] += 1

        async with http.get(base + "get_indices", params={"name": task["config"]["name"]}) as response:
            num_samples = len(await response.json())

        async def episode_loop(slot: int) -> None:
            index = slot
            while time.monotonic() < deadline:
                try:
                    name = task["config"]["name"]
                    code, headers, out = await post("start_sample", json={"name": name, "index": index % num_samples})
                    if code != 200:
                        failures[f"start_sample {code}"] += 1
                        await asyncio.sleep(0.5)
                        continue
                    sid = int(headers["session_id"])
                    session_ids.append(sid)
                    if out["finish"]:  # its worker died as it started
                        count(out)
                        continue
                    turns = rng.randint(2, 8)
                    for turn in range(turns):
                        message = task["finish"] if turn == turns - 1 else task["step"]
                        code, _, out = await post(
                            "interact", headers={"session_id": str(sid)}, json={"messages": [message]}
                        )
                        if code != 200:
                            failures[f"interact {code}"] += 1
                            break
                        if out["finish"]:
                            count(out)
                            break
                except (aiohttp.ClientError, OSError, KeyError, ValueError) as e:
                    failures[type(e).__name__] += 1
                index += args.sessions

        async def killer() -> None:
            while time.monotonic() < deadline - args.kill_every:
                await asyncio.sleep(rng.uniform(0.5, 1.5) * args.kill_every)
                async with aiohttp.ClientSession() as own, own.get(base + "list_workers") as response:
                    workers = [w for w in await response.json() if w.get("pid")]  # (not queued behind the load)
                if workers:
                    victim = rng.choice(workers)["pid"]
                    os.kill(victim, signal.SIGKILL)
                    kills.append(round(time.monotonic() - began, 1))

        async def sampler() -> None:
            while time.monotonic() < deadline:
                rss.append((round(time.monotonic() - began, 1), tree_rss_mb(pid)))
                await asyncio.sleep(10)

        await asyncio.gather(*(episode_loop(i) for i in range(args.sessions)), killer(), sampler())
        await asyncio.sleep(1)  # let the controller record the last endings
        async with http.get(root + "/metrics") as response:
            server_counts = finished_counts(await response.text())
        async with http.get(base + "list_sessions") as response:
            left_open = len(await response.json())
    warm = [mb for t, mb in rss if t >= 30] or [mb for _, mb in rss]
    return {
        "minutes": args.minutes,
        "sessions": args.sessions,
        "episodes": sum(client_counts.values()),
        "completed_client": client_counts["completed"],
        "completed_controller": server_counts["completed"],
        "task_errors_client": client_counts["task error"],
        "task_errors_controller": server_counts["task error"],
        "task_errors_by_cause": dict(error_causes),
        "other_statuses": {k: v for k, v in client_counts.items() if k not in ("completed", "task error")},
        "duplicate_session_ids": len(session_ids) - len(set(session_ids)),
        "kills": len(kills),
        "kill_times_s": kills,
        "request_failures": dict(failures),
        "left_open": left_open,
        "episodes_per_s": round(sum(client_counts.values()) / (time.monotonic() - began), 1),
        "rss_mb_first_warm": warm[0] if warm else None,
        "rss_mb_last": warm[-1] if warm else None,
        "rss_mb_max": max(warm) if warm else None,
        "rss_samples": rss,
    }


def main(argv: list[str] | None = None) -> None:
    """Run the soak and print the table and the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--sessions", type=int, default=500, help="concurrent episode loops")
    parser.add_argument("--workers", type=int, default=2, help="local worker processes")
    parser.add_argument("--kill-every", type=float, default=20.0, help="mean seconds between worker kills")
    parser.add_argument("--in-flight", type=int, default=64, help="client connections")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--task", choices=sorted(TASKS), default="noop", help="what the episodes play")
    parser.add_argument(
        "--hand-off", action="store_true", help="run every env call on a new thread that exits (handoff_envs.py)"
    )
    args = parser.parse_args(argv)
    settings = {"workers": {"restart_backoff_s": 0.0}, "admission": {"max_waiting": 100_000, "timeout_s": 120}}
    config = task_config(args.task, hand_off=args.hand_off)
    with tempfile.TemporaryDirectory(prefix="controller-soak-") as tmp:
        with controller(
            "noop", args.sessions, args.workers, Path(tmp), settings, pythonpath=str(BENCH), task_config=config
        ) as service:
            figures = asyncio.run(soak(service.url, service.process.pid, args))
    for key, value in figures.items():
        if key != "rss_samples":
            print(f"{key:>24}  {value}")
    ok = (
        figures["completed_client"] == figures["completed_controller"]
        and set(figures["task_errors_by_cause"]) <= {"worker lost"}
        and figures["duplicate_session_ids"] == 0
        and not any(k.startswith(("start_sample 5", "interact 5")) for k in figures["request_failures"])
    )
    print(json.dumps({"bench": "controller_soak", "ok": ok, "settings": vars(args), "results": figures}))


if __name__ == "__main__":
    main()
