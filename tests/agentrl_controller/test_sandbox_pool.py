"""The controller's sandbox pool: OS workers lease warm bwrap sandboxes, shutdown leaves none, and a controller
killed with its workers leaves orphans that the next controller's start sweeps away."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from pathlib import Path

import pytest

from agentrl_controller.config import ControllerConfig, SandboxPoolConfig, TaskConfig, load_config
from agentrl_controller.errors import ConfigError
from agentrl_controller.workers.sandboxes import build_pool
from agentrl_envs.core.processes import pid_alive
from agentrl_envs.sandboxes.base import Limits
from agentrl_envs.sandboxes.bwrap import OWNER_FILE, TEMP_PREFIX
from agentrl_envs.sandboxes.cgroup import cgroup_leftovers
from agentrl_envs.sandboxes.pool import PoolSettings, SandboxPool
from agentrl_envs.sandboxes.sweep import sweep_leftovers
from tests.agentrl_controller.conftest import call, running, start_server, stop_server

POOL = SandboxPoolConfig(warm=2, maximum=4, images=["default"])
LIMITS = {"memory_mb": 256, "pids": 128, "cpus": 1.0, "command_timeout_s": 5.0, "disk_mb": 128}


def os_task(**kwargs: object) -> TaskConfig:
    settings = {"name": "os-pool", "env": "os", "split": "test", "lazy": False, "concurrency": 4}
    return TaskConfig(**{**settings, "options": {"backend": "bwrap", "limits": LIMITS}, **kwargs})


def ids_of(pid: int) -> set[str]:
    """Ids of the bwrap sandboxes whose temp dir names ``pid`` as owner."""
    ids = set()
    for directory in Path("/tmp").glob(f"{TEMP_PREFIX}*"):
        try:
            owner = int((directory / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if owner == pid:
            ids.add(directory.name[len(TEMP_PREFIX) :].split("-", 1)[0])
    return ids


def sandboxes_of(pids: set[int]) -> dict[str, int]:
    """Temp dirs and cgroups of the bwrap sandboxes owned by ``pids``."""
    ids = {sandbox_id for pid in pids for sandbox_id in ids_of(pid)}
    cgroups = len({p.name for p in cgroup_leftovers() if p.name.removeprefix("agentrl-") in ids})
    return {"temp dirs": len(ids), "cgroups": cgroups}


def wait_for(predicate, what: str, timeout: float = 60.0) -> None:  # noqa: ANN001 - a test helper
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def gone(pid: int) -> bool:
    return not pid_alive(pid)  # a zombie counts as gone: it can no longer clean up


async def test_os_worker_leases_from_the_warm_pool_and_shutdown_closes_everything() -> None:
    config = ControllerConfig(
        tasks=[os_task(sandbox_pool=POOL)], sweep_sandboxes=False, sessions={"sweep_interval_s": 0.1}
    )
    async with running(config) as (controller, client):
        [(_, worker_pid, _)] = controller.supervisor.processes()
        assert worker_pid is not None
        wait_for(lambda: sandboxes_of({worker_pid})["temp dirs"] == 2, "2 warm sandboxes")
        response = await client.post("start_sample", json={"name": "os-pool", "index": 0})
        assert response.status_code == 200, response.text
        sid = int(response.headers["session_id"])
        # the episode holds one sandbox; the pool refills to 2 idle
        wait_for(lambda: sandboxes_of({worker_pid})["temp dirs"] == 3, "the refill after a lease")
        out = await client.post(
            "interact",
            headers={"session_id": str(sid)},
            json={"messages": [call("bash_action", '{"script": "id -u"}')]},
        )
        assert "0" in out.json()["messages"][-1]["content"]
        out = await client.post(
            "interact", headers={"session_id": str(sid)}, json={"messages": [call("answer_action", '{"answer": "1"}')]}
        )
        assert out.json()["finish"] is True
        wait_for(lambda: sandboxes_of({worker_pid})["temp dirs"] == 2, "the used sandbox closed, never reused")
        await asyncio.sleep(0.5)  # the upkeep loop fetches the pool's counters from the worker
        metrics = (await client.get("http://testserver/metrics")).text
        assert 'controller_sandbox_pool_sandboxes{image="default",state="idle",task="os-pool"} 2.0' in metrics
        assert 'controller_sandbox_pool_sandboxes{image="default",state="leased",task="os-pool"} 0.0' in metrics
    assert gone(worker_pid)
    assert sandboxes_of({worker_pid}) == {"temp dirs": 0, "cgroups": 0}


async def test_without_a_pool_config_each_episode_opens_a_cold_sandbox() -> None:
    async with running(ControllerConfig(tasks=[os_task()], sweep_sandboxes=False)) as (controller, _):
        [(_, worker_pid, _)] = controller.supervisor.processes()
        assert worker_pid is not None
        time.sleep(0.5)
        assert sandboxes_of({worker_pid})["temp dirs"] == 0


def test_a_restarted_controller_sweeps_what_a_killed_one_left(tmp_path: Path) -> None:
    server = start_server(tmp_path, [os_task(sandbox_pool=POOL)])
    try:
        worker_pid = _worker_pid(server.process.pid)
        wait_for(lambda: sandboxes_of({worker_pid})["temp dirs"] == 2, "2 warm sandboxes")
        # kill -9 the controller and its worker: nobody is left to close the sandboxes
        os.kill(worker_pid, signal.SIGKILL)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        wait_for(lambda: gone(worker_pid), "the worker to die")
        assert sandboxes_of({worker_pid}) == {"temp dirs": 2, "cgroups": 2}  # orphans of a dead owner
        orphan_cgroups = {
            path for path in cgroup_leftovers() if path.name.removeprefix("agentrl-") in ids_of(worker_pid)
        }
    finally:
        stop_server(server)
    second = start_server(tmp_path, [os_task(sandbox_pool=POOL.model_copy(update={"warm": 0}))])
    try:
        assert sandboxes_of({worker_pid}) == {"temp dirs": 0, "cgroups": 0}
        assert len(orphan_cgroups) >= 2 and not orphan_cgroups & set(cgroup_leftovers())
        assert "sandbox sweep: removed leftovers" in second.log.read_text()
    finally:
        stop_server(second)


def test_a_worker_whose_controller_was_killed_closes_its_pool(tmp_path: Path) -> None:
    server = start_server(tmp_path, [os_task(sandbox_pool=POOL)])
    try:
        worker_pid = _worker_pid(server.process.pid)
        wait_for(lambda: sandboxes_of({worker_pid})["temp dirs"] == 2, "2 warm sandboxes")
        server.process.send_signal(signal.SIGKILL)  # the worker notices its parent is gone and shuts down
        server.process.wait()
        wait_for(lambda: gone(worker_pid), "the worker to exit", timeout=30)
        assert sandboxes_of({worker_pid}) == {"temp dirs": 0, "cgroups": 0}
    finally:
        stop_server(server)


def _worker_pid(controller_pid: int) -> int:
    """The pid of the controller's (only) worker process, once it serves."""
    children: list[str] = []

    def spawned() -> bool:
        children[:] = Path(f"/proc/{controller_pid}/task/{controller_pid}/children").read_text().split()
        return len(children) == 1

    wait_for(spawned, "the worker process")
    return int(children[0])


def test_pool_config_is_validated_and_read_from_yaml(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exceeds sandbox_pool.maximum"):
        SandboxPoolConfig(warm=5, maximum=2)
    path = tmp_path / "controller.yaml"
    path.write_text(
        "tasks:\n- name: os-std\n  env: os\n  options: {backend: docker}\n"
        "  sandbox_pool: {warm: 1, maximum: 8, images: [default]}\n"
    )
    config = load_config(path)
    assert config.sweep_sandboxes is True
    assert config.tasks[0].sandbox_pool == SandboxPoolConfig(warm=1, maximum=8, images=["default"])
    with pytest.raises(ConfigError, match="sandbox_pool"):
        path.write_text("tasks:\n- {name: os-std, env: os, sandbox_pool: {size: 3}}\n")
        load_config(path)


def test_the_controller_and_the_env_in_process_build_the_same_pool() -> None:
    """Same options, same defaults: the worker's pool (``sandbox_pool: {}``) and the env's own (``gym.make``)."""
    import gymnasium as gym

    options, pool = build_pool(os_task(sandbox_pool=SandboxPoolConfig()))
    env = gym.make("AgentBench/OS-v0", split="test", backend="bwrap", limits=LIMITS)
    try:
        assert isinstance(pool, SandboxPool) and options["backend"] is pool
        own = env.unwrapped.sandboxes
        assert isinstance(own, SandboxPool)
        assert own.settings == pool.settings == PoolSettings()
        assert type(own.backend) is type(pool.backend) and own.backend.limits == pool.backend.limits == Limits(**LIMITS)
    finally:
        env.close()
        if pool is not None:
            pool.close()


def test_bad_sandbox_options_fail_the_task_with_a_clear_error() -> None:
    task = os_task(options={"backend": "bwrap", "backend_options": {"pool_size": 2}}, sandbox_pool=POOL)
    with pytest.raises(ConfigError, match=re.escape("task 'os-pool': The sandbox pool is given twice")):
        build_pool(task)
    with pytest.raises(ConfigError, match=re.escape("task 'os-pool': Invalid sandbox options: limits.cpu")):
        build_pool(os_task(options={"limits": {"cpu": 2}}, sandbox_pool=POOL))


async def _until(predicate, what: str, timeout: float = 60.0) -> None:  # noqa: ANN001 - a test helper
    """``wait_for`` that lets the controller's event loop run (it restarts the broker)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def test_the_worker_processes_of_a_task_lease_from_one_broker() -> None:
    pool = SandboxPoolConfig(warm=1, maximum=3, images=["default"])
    config = ControllerConfig(
        tasks=[os_task(sandbox_pool=pool, workers=2)], sweep_sandboxes=False, sessions={"sweep_interval_s": 0.1}
    )
    async with running(config) as (controller, client):
        broker_pid = controller.supervisor.broker_pid("os-pool")
        assert broker_pid is not None
        await _until(lambda: len(controller.pool.for_task("os-pool")) == 2, "both workers")
        workers = {w.pid for w in controller.pool.for_task("os-pool")}
        await _until(lambda: sandboxes_of({broker_pid})["temp dirs"] == 1, "the broker's warm sandbox")
        sids = []
        for _ in range(2):  # one session on each worker (the controller picks the freer one)
            response = await client.post("start_sample", json={"name": "os-pool", "index": 0})
            assert response.status_code == 200, response.text
            sids.append(int(response.headers["session_id"]))
        assert {s.worker.pid for s in controller.sessions.sessions.values()} == workers
        for sid in sids:
            out = await client.post(
                "interact",
                headers={"session_id": str(sid)},
                json={"messages": [call("bash_action", '{"script": "id -u"}')]},
            )
            assert "0" in out.json()["messages"][-1]["content"], out.text
        assert sandboxes_of(workers)["temp dirs"] == 0  # every sandbox is the broker's...
        assert 2 <= sandboxes_of({broker_pid})["temp dirs"] <= 3  # ...and the task's maximum holds
        await asyncio.sleep(0.5)  # the upkeep loop fetches the counters: the one pool is counted once
        metrics = (await client.get("http://testserver/metrics")).text
        assert 'controller_sandbox_pool_sandboxes{image="default",state="leased",task="os-pool"} 2.0' in metrics
        # the broker dies: the sessions' next step ends as a task error at once, and a new broker serves new ones
        os.kill(broker_pid, signal.SIGKILL)
        out = await client.post(
            "interact",
            headers={"session_id": str(sids[0])},
            json={"messages": [call("bash_action", '{"script": "ls"}')]},
        )
        assert out.json()["status"] == "task error" and out.json()["finish"] is True, out.text
        await _until(lambda: controller.supervisor.broker_pid("os-pool") not in (None, broker_pid), "a new broker")
        response = await client.post("start_sample", json={"name": "os-pool", "index": 0})
        assert response.status_code == 200 and response.json()["status"] == "running", response.text
        new_broker = controller.supervisor.broker_pid("os-pool")
    assert new_broker is not None and gone(new_broker) and all(gone(pid) for pid in workers if pid)
    assert sandboxes_of({new_broker}) == {"temp dirs": 0, "cgroups": 0}
    sweep_leftovers()  # what the killed broker left (its dead owner's temp dirs and cgroups)
    assert sandboxes_of({broker_pid}) == {"temp dirs": 0, "cgroups": 0}
