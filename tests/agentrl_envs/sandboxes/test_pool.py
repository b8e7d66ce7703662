"""The sandbox pool: warm leases are faster than cold ones, no sandbox is leased twice, unhealthy sandboxes
are replaced, the maximum holds, and shutdown leaves nothing of the pool behind (real bwrap; Docker too)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from agentrl_envs.core.errors import InfraError
from agentrl_envs.sandboxes.base import SandboxBackend
from agentrl_envs.sandboxes.bwrap import OWNER_FILE, TEMP_PREFIX
from agentrl_envs.sandboxes.cgroup import cgroup_leftovers
from agentrl_envs.sandboxes.options import SandboxOptions, open_sandboxes
from agentrl_envs.sandboxes.pool import PooledSandbox, PoolSettings, SandboxPool
from tests.agentrl_envs.sandboxes.conftest import TEST_LIMITS


def _backend(name: str, request: pytest.FixtureRequest) -> SandboxBackend:
    if name == "docker":
        request.getfixturevalue("docker_engine")
    # the test's SandboxPool does the pooling
    return open_sandboxes(SandboxOptions(backend=name, limits=TEST_LIMITS, pool=None))


def ours() -> dict[str, int]:
    """What sandboxes of this process hold on the host: temp dirs, cgroups, sandbox processes, containers."""
    dirs = [d for d in Path("/tmp").glob(f"{TEMP_PREFIX}*") if _owner(d) == os.getpid()]
    ids = {d.name[len(TEMP_PREFIX) :].split("-", 1)[0] for d in dirs}
    # cgroup v1 has one directory per controller: count sandboxes, not directories
    cgroups = len({p.name for p in cgroup_leftovers() if p.name.removeprefix("agentrl-") in ids})
    children = [pid for task in Path("/proc/self/task").iterdir() for pid in _read(task / "children").split()]
    containers = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=agentrl.owner={os.uname().nodename}:{os.getpid()}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        "temp dirs": len(dirs),
        "cgroups": cgroups,
        "processes": len(children),
        "containers": len(containers.stdout.split()) if containers.returncode == 0 else 0,
    }


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:  # a thread that just exited
        return ""


def _owner(directory: Path) -> int:
    try:
        return int((directory / OWNER_FILE).read_text())
    except (OSError, ValueError):
        return -1


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return "gone"


def _wait_idle(pool: SandboxPool, image: str, count: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stats = pool.stats().get(image)
        if stats is not None and stats.idle >= count and stats.starting == 0:
            return
        time.sleep(0.05)
    raise AssertionError(f"the pool did not warm up to {count} idle sandboxes: {pool.stats()}")


@pytest.mark.parametrize("name", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def test_warm_lease_is_faster_than_cold_and_shutdown_leaves_nothing(name: str, request: pytest.FixtureRequest) -> None:
    if name == "docker":
        request.getfixturevalue("docker_engine")  # before counting: starting dockerd is not the pool's doing
    before = ours()
    cold_backend = _backend(name, request)
    started = time.perf_counter()
    cold_backend.open("default").close()
    cold = time.perf_counter() - started
    cold_backend.close()

    pool = SandboxPool(_backend(name, request), PoolSettings(warm=2, maximum=4))
    try:
        pool.prewarm(["default"])
        _wait_idle(pool, "default", 2)
        started = time.perf_counter()
        box = pool.open("default")
        warm = time.perf_counter() - started
        assert box.run_shell("echo warm").output == b"warm\n"
        logging.getLogger(__name__).info("%s: cold open %.0f ms, warm lease %.1f ms", name, 1000 * cold, 1000 * warm)
        assert warm < cold / 2
        _wait_idle(pool, "default", 2)  # refilled after the lease
        assert pool.stats()["default"].leased == 1
        during = ours()  # what shutdown must remove: 2 idle and 1 leased sandbox
        kind = "containers" if name == "docker" else "temp dirs"
        assert during[kind] == before[kind] + 3
        if name == "bwrap":
            assert during["cgroups"] == before["cgroups"] + 3 and during["processes"] == before["processes"] + 3
    finally:
        pool.close()  # closes the leased sandbox too
    assert not box.alive
    assert ours() == before


def test_a_sandbox_is_never_leased_twice(request: pytest.FixtureRequest) -> None:
    pool = SandboxPool(_backend("bwrap", request), PoolSettings(warm=2, maximum=6, exec_check=True))
    seen: list[int] = []
    lock = threading.Lock()

    def episode() -> None:
        box = pool.open("default")
        with lock:
            seen.append(box.shell_pid)
        box.run_shell("touch /root/dirty")
        box.close()

    try:
        threads = [threading.Thread(target=episode) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Shell pids are unique while their sandboxes live; a reused sandbox would show its pid twice.
        assert len(seen) == 8 and len(set(seen)) == 8
        with pool.open("default") as fresh:  # never the dirty system of an earlier episode
            assert fresh.exec(["test", "-e", "/root/dirty"]).exit_code == 1
        assert pool.stats()["default"].created >= 9
    finally:
        pool.close()


def test_a_given_back_sandbox_is_closed_in_the_background_and_never_leased_again(
    request: pytest.FixtureRequest,
) -> None:
    before = ours()
    gate = threading.Event()
    pool = SandboxPool(_backend("bwrap", request), PoolSettings(warm=1, maximum=3))
    try:
        pool.prewarm(["default"])
        _wait_idle(pool, "default", 1)
        box = pool.open("default")
        assert isinstance(box, PooledSandbox)
        used = box.inner
        close = used.close
        used.close = lambda: (gate.wait(30), close())  # type: ignore[method-assign] # a close that takes its time
        box.run_shell("touch /root/dirty")
        started = time.perf_counter()
        box.close()
        given_back = time.perf_counter() - started
        assert given_back < 0.05  # the episode does not wait for the close
        assert pool.stats()["default"].closing == 1 and used.alive  # still being closed, on the pool's thread
        _wait_idle(pool, "default", 1)
        with pool.open("default") as fresh:  # a fresh sandbox, never the one given back
            assert isinstance(fresh, PooledSandbox) and fresh.inner is not used
            assert fresh.exec(["test", "-e", "/root/dirty"]).exit_code == 1
        gate.set()
        deadline = time.monotonic() + 30
        while pool.stats()["default"].closing and time.monotonic() < deadline:
            time.sleep(0.02)
        assert pool.stats()["default"].closing == 0 and not used.alive
    finally:
        gate.set()
        pool.close()
    assert ours() == before


def test_a_lease_at_the_maximum_waits_for_given_back_sandboxes_to_close(request: pytest.FixtureRequest) -> None:
    # A sandbox being closed still holds its memory and processes: it counts against the maximum.
    pool = SandboxPool(_backend("bwrap", request), PoolSettings(warm=0, maximum=1, lease_timeout_s=30))
    try:
        first = pool.open("default")
        gate = threading.Event()
        close = first.inner.close
        first.inner.close = lambda: (gate.wait(30), close())  # type: ignore[method-assign]
        first.close()
        threading.Timer(0.3, gate.set).start()
        started = time.perf_counter()
        with pool.open("default") as second:
            assert time.perf_counter() - started >= 0.25 and not first.inner.alive
            assert second.inner is not first.inner
    finally:
        gate.set()
        pool.close()


def test_an_unhealthy_idle_sandbox_is_replaced(request: pytest.FixtureRequest) -> None:
    before = ours()
    pool = SandboxPool(_backend("bwrap", request), PoolSettings(warm=1, maximum=2))
    try:
        pool.prewarm(["default"])
        _wait_idle(pool, "default", 1)
        idle = next(iter(pool._images["default"].idle))
        os.kill(idle.shell_pid, signal.SIGKILL)  # the idle sandbox's shell dies while it waits
        deadline = time.monotonic() + 10
        while _state(idle.shell_pid) not in ("gone", "Z") and time.monotonic() < deadline:
            time.sleep(0.01)
        box = pool.open("default")
        assert isinstance(box, PooledSandbox) and box.inner is not idle
        assert box.run_shell("echo ok").output == b"ok\n"
        assert pool.stats()["default"].unhealthy == 1
        box.close()
    finally:
        pool.close()
    assert ours() == before


def test_a_lease_waits_at_the_maximum_and_times_out(request: pytest.FixtureRequest) -> None:
    pool = SandboxPool(_backend("bwrap", request), PoolSettings(warm=0, maximum=1, lease_timeout_s=0.5))
    try:
        held = pool.open("default")
        with pytest.raises(InfraError, match="maximum"):
            pool.open("default")
        threading.Timer(0.2, held.close).start()
        pool.settings = PoolSettings(warm=0, maximum=1, lease_timeout_s=30)
        with pool.open("default") as box:  # got the slot the first lease freed
            assert box.alive
    finally:
        pool.close()
    with pytest.raises(InfraError, match="closed"):
        pool.open("default")
