"""Load on the controller: interact throughput, latency overhead against the env in process, and memory.

For each target and each session count N it opens N concurrent sessions, then keeps ``--in-flight`` interacts
going for ``--seconds`` (every session serves one request at a time, as the protocol requires), then cancels
them all. Targets:

- ``controller:noop``: the no-op task through ``agentrl-controller serve`` (local worker processes);
- ``controller:db``: the DB task (sqlite backend), each step a real ``execute_sql``;
- ``upstream:noop``: upstream's ``agentrl-worker`` (PyPI, in its own venv) serving a no-op task, driven
  directly with nothing in between: what the controller is compared with.

The load client is the controller's own small keep-alive HTTP client (``agentrl_controller.http.client``):
it costs a fraction of aiohttp's CPU per request, and the client shares the machine's cores with the servers.
CPU per interact is reported by process (the server: the controller, or upstream's worker alone; its worker
processes; this client): on a shared machine a steadier figure than the rate. ``est_idle_ceiling_per_s`` is an
estimate, not a measurement: the machine's cores divided by the three processes' CPU per interact together.
Overhead is the interact latency minus the same env's ``step`` latency in process (p50 and p99). RSS is the
controller and its worker processes (together and apart), measured with all N sessions open; sessions open
``--open-concurrency`` at a time, so 10,000 open in seconds.

    uv run python bench/controller_load.py                               # everything (several minutes)
    uv run python bench/controller_load.py --targets controller:noop --sessions 100 --seconds 3
    uv run python bench/controller_load.py --targets controller:noop --sessions 1000,10000 --seconds 5 --in-flight 32
    # another version of the controller under the same load, e.g. main's (git archive main packages | tar -x -C X)
    uv run python bench/controller_load.py --targets controller:noop --controller-src X/packages/agentrl-controller/src

Prints a table and, last, one JSON line with every figure (what ``docs/benchmarks.md`` records).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from _stats import percentile  # bench/ is on sys.path when a benchmark runs as a script
from agentrl_controller.http.client import HttpPool

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the upstream venv helper and its echo task live with the compatibility tests

from tests.agentrl_controller.upstream.venv import upstream_venv  # noqa: E402

ACTIONS: dict[str, dict[str, Any]] = {
    "noop": {"name": "noop", "arguments": "{}"},
    "db": {"name": "execute_sql", "arguments": json.dumps({"query": "SELECT 1"})},
    "echo": {"name": "echo", "arguments": json.dumps({"text": "ok"})},
}


def action(tool: str) -> dict[str, Any]:
    """An assistant message with one call of ``tool``."""
    call = {"id": "call_1", "type": "function", "function": ACTIONS[tool]}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def free_port() -> int:
    """A free TCP port on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def process_tree(pid: int) -> list[int]:
    """``pid`` and all its descendants (from ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        todo += children.get(current, [])
    return tree


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` in MiB (from ``/proc``); 0 for a process that is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def tree_rss_mb(pid: int) -> tuple[float, float]:
    """Resident memory in MiB of ``pid`` and of all its descendants together (the server, its workers)."""
    server, *workers = process_tree(pid)
    return round(rss_mb(server), 1), round(sum(rss_mb(w) for w in workers), 1)


def cpu_s(pid: int) -> float:
    """CPU time (user + system) ``pid`` has used so far, in seconds; 0 for a process that is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU time of this (the load client's) process."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# ----------------------------------------------------------------------------------------------- in process


def in_process_step_ms(task: str, steps: int) -> list[float]:
    """Latency of ``step`` on the env itself, one session, no HTTP."""
    if task == "noop":
        from agentrl_controller.workers.noop import NoopEnv

        env: Any = NoopEnv()
    else:
        import agentrl_envs

        env = agentrl_envs.make(task, backend="sqlite", max_rounds=10**9).unwrapped
    env.reset(options={"index": 0})
    message, timings = action(task), []
    for _ in range(steps):
        began = time.perf_counter()
        env.step(message)
        timings.append((time.perf_counter() - began) * 1000)
    env.close()
    return timings


# ----------------------------------------------------------------------------------------------- servers


@dataclass
class Service:
    """A server process under test and how to talk to it."""

    process: subprocess.Popen[bytes]
    url: str
    start: Callable[[HttpPool, int, int], Awaitable[int]]
    interact: Callable[[HttpPool, int, dict[str, Any]], Awaitable[dict[str, Any]]]
    cancel: Callable[[HttpPool, int], Awaitable[Any]]


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"server not ready: {log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextmanager
def controller(
    task: str,
    sessions: int,
    workers: int,
    tmp: Path,
    settings: dict[str, Any] | None = None,
    pythonpath: str | None = None,
    task_config: dict[str, Any] | None = None,
) -> Iterator[Service]:
    """``agentrl-controller serve`` with one task sized for ``sessions``.

    Args:
        task: ``noop`` or ``db``.
        sessions: Concurrent sessions it must hold.
        workers: Worker processes.
        tmp: Where its config and log go.
        settings: More config keys.
        pythonpath: Put first on the controller's ``PYTHONPATH``: another checkout's ``agentrl_controller``
            (``packages/agentrl-controller/src``), to compare versions side by side under the same load.
        task_config: The task's config (``name``, ``env``, ``options``) in place of the one ``task`` names.
    """
    if task_config is not None:
        config = dict(task_config)
    elif task == "noop":
        config = {"name": "noop", "env": "agentrl_controller.workers.noop:NoopEnv"}
    else:
        config = {"name": "dbbench-std", "env": "db", "options": {"backend": "sqlite", "max_rounds": 10**9}}
    per_worker = -(-sessions // workers)
    config.update(concurrency=per_worker, workers=workers, lazy=False)
    path = tmp / "controller.yaml"
    path.write_text(yaml.safe_dump({"tasks": [config], "admission": {"max_waiting": sessions}, **(settings or {})}))
    port, log = free_port(), tmp / "controller.log"
    command = [sys.executable, "-m", "agentrl_controller.cli", "serve", "--config", str(path), "--port", str(port)]
    with log.open("wb") as out:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [pythonpath, os.environ.get("PYTHONPATH")]))}
        process = subprocess.Popen(
            [*command, "--log-level", "WARNING"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
    base, name = f"http://127.0.0.1:{port}/api/", config["name"]

    async def start(client: HttpPool, _: int, index: int) -> int:
        return int(
            _ok(await client.request("POST", "start_sample", _json({"name": name, "index": index})))["session_id"]
        )

    async def interact(client: HttpPool, sid: int, message: dict[str, Any]) -> dict[str, Any]:
        body = _json({"messages": [message]})
        return _ok(await client.request("POST", "interact", body, headers={"session_id": str(sid)}))

    async def cancel(client: HttpPool, sid: int) -> Any:
        return (await client.request("POST", "cancel", headers={"session_id": str(sid)})).status

    try:
        _wait_ready(process, f"http://127.0.0.1:{port}/healthz", log)
        yield Service(process, base, start, interact, cancel)
    finally:
        _stop(process)


@contextmanager
def upstream_worker(sessions: int, tmp: Path) -> Iterator[Service]:
    """Upstream's ``agentrl-worker`` alone, serving the echo task, with no controller (heartbeats go nowhere)."""
    venv = upstream_venv()
    port, log = free_port(), tmp / "worker.log"
    path = tmp / "worker.yaml"
    task = {"module": "echo_task.EchoTask", "parameters": {"name": "echo", "concurrency": sessions, "rounds": 10**9}}
    path.write_text(yaml.safe_dump({"echo": task}))
    command = [str(venv / "bin" / "python"), "-m", "agentrl.worker", "echo", "-c", str(path), "--log-level", "WARNING"]
    command += ["-C", "http://127.0.0.1:9/api", "-s", f"http://127.0.0.1:{port}/api", "--host", "127.0.0.1"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests" / "agentrl_controller" / "upstream")}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "-p", str(port)], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}/api/"

    async def start(client: HttpPool, sid: int, index: int) -> int:
        _ok(await client.request("POST", "start_sample", _json({"index": index, "session_id": sid})))
        return sid

    async def interact(client: HttpPool, sid: int, message: dict[str, Any]) -> dict[str, Any]:
        return _ok(await client.request("POST", "interact", _json({"session_id": sid, "messages": [message]})))[
            "env_out"
        ]

    async def cancel(client: HttpPool, sid: int) -> Any:
        return (await client.request("POST", "cancel", _json({"session_id": sid}))).status

    try:
        _wait_ready(process, base + "worker_status", log)
        yield Service(process, base, start, interact, cancel)
    finally:
        _stop(process)


def _json(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def _ok(response: Any) -> Any:
    """The JSON body of a 200 answer."""
    if response.status != 200:
        raise RuntimeError(f"server answered {response.status}: {response.body[:500]!r}")
    return json.loads(response.body)


# ----------------------------------------------------------------------------------------------- load


async def _limited(coroutines: Iterator[Awaitable[Any]], limit: int) -> list[Any]:
    results: list[Any] = []
    semaphore = asyncio.Semaphore(limit)

    async def one(coroutine: Awaitable[Any]) -> None:
        async with semaphore:
            results.append(await coroutine)

    await asyncio.gather(*(one(c) for c in coroutines))
    return results


async def drive(
    service: Service, *, sessions: int, in_flight: int, seconds: float, tool: str, open_concurrency: int
) -> dict[str, Any]:
    """Open ``sessions`` (``open_concurrency`` at once), keep ``in_flight`` interacts going for ``seconds``, measure,
    cancel everything."""
    client = HttpPool(service.url, max_connections=max(in_flight, open_concurrency), connect_timeout_s=30)
    try:
        ids = itertools.count(1)
        began = time.perf_counter()
        starts = (service.start(client, next(ids), i % 10) for i in range(sessions))
        sids = await _limited(starts, open_concurrency)
        start_s = time.perf_counter() - began
        rss_open = tree_rss_mb(service.process.pid)
        idle: asyncio.Queue[int] = asyncio.Queue()
        for sid in sids:
            idle.put_nowait(sid)
        latencies: list[float] = []
        finished = 0
        message = action(tool)
        deadline = time.perf_counter() + seconds

        async def loop() -> None:
            nonlocal finished
            while time.perf_counter() < deadline:
                sid = await idle.get()
                sent = time.perf_counter()
                out = await service.interact(client, sid, message)
                latencies.append((time.perf_counter() - sent) * 1000)
                finished += bool(out.get("finish"))
                idle.put_nowait(sid)

        # CPU per interact, by process: on a shared machine a steadier figure than the rate, and it shows whether
        # the client, the controller or its workers take the cores.
        pids = process_tree(service.process.pid)
        cpu_before = [cpu_s(pid) for pid in pids], own_cpu_s()
        began = time.perf_counter()
        await asyncio.gather(*(loop() for _ in range(in_flight)))
        elapsed = time.perf_counter() - began
        cpu_after = [cpu_s(pid) for pid in pids], own_cpu_s()
        used = [after - before for before, after in zip(cpu_before[0], cpu_after[0], strict=True)]
        per_interact_us = 1e6 / max(len(latencies), 1)
        rss_after = tree_rss_mb(service.process.pid)
        await _limited((service.cancel(client, sid) for sid in sids), open_concurrency)
    finally:
        await client.aclose()
    return {
        "sessions": sessions,
        "in_flight": in_flight,
        "start_per_s": round(sessions / start_s, 1),
        "interacts": len(latencies),
        "interacts_per_s": round(len(latencies) / elapsed, 1),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "rss_mb": round(max(sum(rss_open), sum(rss_after)), 1),
        "server_rss_mb": max(rss_open[0], rss_after[0]),
        "workers_rss_mb": max(rss_open[1], rss_after[1]),
        "server_cpu_us": round(used[0] * per_interact_us, 1),
        "workers_cpu_us": round(sum(used[1:]) * per_interact_us, 1),
        "client_cpu_us": round((cpu_after[1] - cpu_before[1]) * per_interact_us, 1),
        "server_cpu_pct": round(100 * used[0] / elapsed, 1),
        "total_cpu_us": round((sum(used) + cpu_after[1] - cpu_before[1]) * per_interact_us, 1),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "unexpected_finishes": finished,
    }


def run_target(
    target: str, counts: list[int], args: argparse.Namespace, baseline: dict[str, list[float]]
) -> list[dict]:
    """Every session count against one target."""
    kind, task = target.split(":")
    tool = "echo" if kind == "upstream" else task
    rows = []
    for sessions in counts:
        with tempfile.TemporaryDirectory(prefix="controller-load-") as tmp:
            context = (
                upstream_worker(sessions, Path(tmp))
                if kind == "upstream"
                else controller(task, sessions, args.workers, Path(tmp), pythonpath=args.controller_src)
            )
            with context as service:
                in_flight = min(args.in_flight, sessions)
                figures = asyncio.run(
                    drive(
                        service,
                        sessions=sessions,
                        in_flight=in_flight,
                        seconds=args.seconds,
                        tool=tool,
                        open_concurrency=min(args.open_concurrency, sessions),
                    )
                )
        # Under load the latency includes queueing behind the other requests in flight: lower --in-flight
        # to see the per-request cost alone.
        step = baseline["db" if task == "db" else "noop"]
        figures.update(
            target=target,
            inproc_p50_ms=percentile(step, 50),
            inproc_p99_ms=percentile(step, 99),
            overhead_p50_ms=round(figures["p50_ms"] - percentile(step, 50), 3),
            overhead_p99_ms=round(figures["p99_ms"] - percentile(step, 99), 3),
            # An estimate, not a measurement: the rate at which the processes' CPU per interact would fill every
            # core of an otherwise idle machine (it ignores contention, scheduling and the kernel's idle paths).
            est_idle_ceiling_per_s=round((os.cpu_count() or 1) * 1e6 / max(figures["total_cpu_us"], 1e-9)),
        )
        rows.append(figures)
        print(f"  {target} N={sessions}: {figures['interacts_per_s']}/s p99 {figures['p99_ms']} ms", file=sys.stderr)
    return rows


def print_table(rows: list[dict]) -> None:
    """The figures as an aligned text table."""
    columns = [
        "target",
        "sessions",
        "in_flight",
        "interacts_per_s",
        "p50_ms",
        "p99_ms",
        "inproc_p50_ms",
        "overhead_p50_ms",
        "overhead_p99_ms",
        "start_per_s",
        "rss_mb",
        "server_rss_mb",
        "workers_rss_mb",
        "server_cpu_us",
        "workers_cpu_us",
        "client_cpu_us",
        "total_cpu_us",
        "est_idle_ceiling_per_s",
        "server_cpu_pct",
        "load_avg_1m",
    ]
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in columns]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    for row in rows:
        print("  ".join(str(row[c]).rjust(w) for c, w in zip(columns, widths, strict=True)))


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print the table and the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", default="controller:noop,controller:db,upstream:noop")
    parser.add_argument("--sessions", default="100,1000,5000", help="comma-separated concurrent session counts")
    parser.add_argument("--in-flight", type=int, default=64, help="interacts in flight at once (client connections)")
    parser.add_argument(
        "--open-concurrency", type=int, default=256, help="start_sample (and cancel) calls in flight while opening"
    )
    parser.add_argument("--seconds", type=float, default=8.0, help="measuring time per point")
    parser.add_argument("--workers", type=int, default=1, help="local worker processes per task")
    parser.add_argument(
        "--controller-src",
        help="another checkout's packages/agentrl-controller/src to run the controller from (before/after runs)",
    )
    parser.add_argument("--inproc-steps", type=int, default=2000, help="steps timed in process for the baseline")
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.sessions.split(",")]
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    baseline = {
        "noop": in_process_step_ms("noop", args.inproc_steps),
        "db": in_process_step_ms("db", args.inproc_steps) if any(t.endswith(":db") for t in targets) else [],
    }
    rows = [row for target in targets for row in run_target(target, counts, args, baseline)]
    print_table(rows)
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "load_avg": os.getloadavg()}
    print(json.dumps({"bench": "controller_load", "machine": machine, "settings": vars(args), "results": rows}))


if __name__ == "__main__":
    main()
