"""Episodes outlive the threads that drive them, and nothing outlives the process that owns them.

Servers and thread pools hand an env from thread to thread (Starlette's anyio workers are retired when idle,
``asyncio.to_thread`` takes any pool thread). Every task and backend is played here with each phase on a new
thread that has exited before the next begins: make and reset, the first step, the remaining steps, close.
The oracle must finish the episode as on one thread, and nothing may be left behind. Then the owning process
is killed with SIGKILL after a hand-off: whatever it started (sandbox, server, engine) must die with it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import gymnasium as gym
import pytest

import agentrl_envs  # noqa: F401 - registers the tasks
from agentrl_envs.core import load_oracle
from agentrl_envs.core.processes import pid_alive
from agentrl_envs.tasks.alfworld.pool import shared_pool
from tests.agentrl_envs.sandboxes.conftest import docker_engine  # noqa: F401 - the docker case's fixture

T = TypeVar("T")

POOL_SIZE = 3
"""An ALFWorld engine pool size no other test uses, so this test's pool is its own."""

CASES = [
    pytest.param("os", {"backend": "bwrap"}, id="os-bwrap"),
    pytest.param("os", {"backend": "docker"}, id="os-docker", marks=pytest.mark.docker),
    pytest.param("db", {"backend": "sqlite"}, id="db-sqlite"),
    pytest.param("db", {"backend": "mariadb"}, id="db-mariadb", marks=pytest.mark.mariadb),
    pytest.param("kg", {"backend": "inprocess"}, id="kg-inprocess"),
    pytest.param("kg", {"backend": "virtuoso"}, id="kg-virtuoso", marks=pytest.mark.slow),
    pytest.param("webshop", {}, id="webshop"),
    pytest.param("alfworld", {"engine": "inline"}, id="alfworld-inline"),
    pytest.param("alfworld", {"engine": "process"}, id="alfworld-process"),
    pytest.param("alfworld", {"engine_pool_size": POOL_SIZE}, id="alfworld-pool"),
]
ENV_IDS = {"os": "OS", "db": "DB", "kg": "KG", "webshop": "WebShop", "alfworld": "ALFWorld"}
INDEX = 1
"""A test sample whose gold solution the oracle plays to full reward on every task."""


def on_new_thread(work: Callable[[], T]) -> T:
    """Run ``work`` on a new thread and return once that thread is gone from the kernel, not only from Python.

    Python's ``join`` returns a little before the OS thread exits, and it is the exit that sends the
    parent-death signal, so the test waits for ``/proc`` to drop the thread.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as e:  # re-raised on the calling thread
            outcome["error"] = e

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    deadline = time.monotonic() + 5.0
    while Path(f"/proc/self/task/{thread.native_id}").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def descendants(root: int) -> set[tuple[int, str]]:
    """The processes below ``root``, as (pid, start time) so a reused pid is a different process."""
    parents: dict[int, list[tuple[int, str]]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append((int(stat.parent.name), fields[19]))
    found: set[tuple[int, str]] = set()
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found and pid_alive(child[0]):
                found.add(child)
                todo.append(child[0])
    return found


def owned_leftovers() -> set[str]:
    """Files and containers this process's envs create, found by this process's pid (other tests' are not ours)."""
    pid = os.getpid()
    found = {str(path) for root in ("/tmp", "/dev/shm") for path in Path(root).glob(f"agentrl-*-{pid}-*")}
    for layer in Path("/tmp").glob("agentrl-bwrap-*"):
        try:
            if (layer / "owner.pid").read_text() == str(pid):
                found.add(str(layer))
        except OSError:
            pass
    result = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=agentrl.owner={pid}"], capture_output=True, text=True, check=False
    )
    if result.returncode == 0:
        found |= {f"container {name}" for name in result.stdout.split()}
    return found


def process_wide(options: dict[str, Any]) -> set[tuple[int, str]]:
    """Processes that outlive an env by design: multiprocessing's forkserver and resource tracker (one each per
    process), which the ALFWorld engines are forked from."""
    if "engine_pool_size" not in options and options.get("engine") != "process":
        return set()
    from multiprocessing import forkserver, resource_tracker

    pids = {forkserver._forkserver._forkserver_pid, resource_tracker._resource_tracker._pid}  # type: ignore[attr-defined]
    return {p for p in descendants(os.getpid()) if p[0] in pids}


@pytest.fixture
def case_env(request: pytest.FixtureRequest) -> Iterator[None]:
    """Starts what a case needs (Docker) and stops what it leaves process-wide (the ALFWorld engine pool)."""
    if request.node.callspec.id == "os-docker":
        request.getfixturevalue("docker_engine")
    yield
    shared_pool(POOL_SIZE).close()


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("task", "options"), CASES)
def test_an_episode_handed_between_threads_goes_on_and_leaves_nothing(
    task: str, options: dict[str, Any], case_env: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="agentrl_envs")
    before = descendants(os.getpid())
    leftovers_before = owned_leftovers()
    oracle = load_oracle(task, split="test")

    def start() -> tuple[Any, list[Any]]:
        env = gym.make(f"AgentBench/{ENV_IDS[task]}-v0", split="test", **options).unwrapped
        observation, _ = env.reset(options={"index": INDEX})
        oracle.begin(INDEX)
        return env, observation

    env, observation = on_new_thread(start)
    try:
        first = on_new_thread(lambda: env.step(oracle.act(observation)))
        assert first[4]["infra_error"] is False, first[4]
        assert first[4]["status"] in ("running", "completed"), first[4]

        def finish(step: tuple[Any, ...]) -> tuple[Any, ...]:
            while not (step[2] or step[3]):
                step = env.step(oracle.act(step[0]))
            return step

        last = on_new_thread(lambda: finish(first))
    finally:
        on_new_thread(env.close)
    assert (last[4]["status"], last[4]["infra_error"], last[1]) == ("completed", False, 1.0), last[4]
    shared_pool(POOL_SIZE).close()
    left = descendants(os.getpid()) - before - process_wide(options)
    assert {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid, _ in left} == {}
    assert owned_leftovers() - leftovers_before == set()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


OWNER = textwrap.dedent(
    """
    import json, os, sys, threading
    import gymnasium as gym
    import agentrl_envs
    from agentrl_envs.core import load_oracle
    from tests.agentrl_envs.core.test_thread_handoff import INDEX, descendants, on_new_thread

    task, options = sys.argv[1], json.loads(sys.argv[2])
    oracle = load_oracle(task, split="test")

    def start():
        env = gym.make(f"AgentBench/{sys.argv[3]}-v0", split="test", **options).unwrapped
        observation, _ = env.reset(options={"index": INDEX})
        oracle.begin(INDEX)
        return env, observation

    env, observation = on_new_thread(start)
    step = env.step(oracle.act(observation))
    assert step[4]["infra_error"] is False, step[4]
    server = getattr(env, "_virtuoso", None)
    own = [str(server._dir)] if server is not None else []
    print(json.dumps({"pids": sorted(descendants(os.getpid())), "dirs": own}), flush=True)
    threading.Event().wait()
    """
)

KILL_CASES = [
    pytest.param("os", {"backend": "bwrap"}, id="os-bwrap"),
    pytest.param("db", {"backend": "mariadb"}, id="db-mariadb", marks=pytest.mark.mariadb),
    pytest.param("kg", {"backend": "virtuoso"}, id="kg-virtuoso", marks=pytest.mark.slow),
    pytest.param("alfworld", {"engine": "process"}, id="alfworld-process"),
    pytest.param("alfworld", {"engine_pool_size": 1}, id="alfworld-pool"),
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("task", "options"), KILL_CASES)
def test_what_an_owner_started_on_an_exited_thread_dies_with_the_owner(task: str, options: dict[str, Any]) -> None:
    repo = Path(__file__).resolve().parents[3]
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, task, json.dumps(options), ENV_IDS[task]],
        stdout=subprocess.PIPE,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    assert owner.stdout is not None
    line = owner.stdout.readline()
    started = json.loads(line) if line else {}
    os.kill(owner.pid, signal.SIGKILL)  # no chance to clean up
    owner.wait()
    assert started, "the owner failed before it reported what it started"
    children = {pid for pid, _ in started["pids"]}
    assert children, "the owner started no process"
    deadline = time.monotonic() + 20.0
    while (alive := {pid for pid in children if pid_alive(pid)}) and time.monotonic() < deadline:
        time.sleep(0.1)
    # What only the owner could have removed (bwrap's are swept below, by owner pid).
    owned = [Path(p) for root in ("/tmp", "/dev/shm") for p in Path(root).glob(f"agentrl-*-{owner.pid}-*")]
    for path in [*owned, *map(Path, started["dirs"])]:
        shutil.rmtree(path, ignore_errors=True)
    from agentrl_envs.sandboxes.sweep import sweep_leftovers

    sweep_leftovers()
    assert alive == set(), f"still running after their owner was killed: {alive}"
