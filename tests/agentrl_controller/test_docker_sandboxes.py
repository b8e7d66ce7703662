"""Docker sandboxes behind the controller: a killed container ends its episode as an infrastructure fault, and
the containers a killed controller left behind are swept by the next one."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import Any

import pytest

from agentrl_controller.config import ControllerConfig, SandboxPoolConfig, TaskConfig
from agentrl_envs.sandboxes.docker import OWNER_LABEL, engine_client
from tests.agentrl_controller.conftest import call, running, start_server, stop_server
from tests.agentrl_controller.test_sandbox_pool import LIMITS, _worker_pid, gone, wait_for
from tests.agentrl_envs.sandboxes.conftest import docker_engine  # noqa: F401 - the session's Docker engine

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.usefixtures("docker_engine")]

POOL = SandboxPoolConfig(warm=1, maximum=3, images=["default"])


def docker_task(**kwargs: object) -> TaskConfig:
    settings = {"name": "os-docker", "env": "os", "split": "test", "lazy": False, "concurrency": 4}
    return TaskConfig(**{**settings, "options": {"backend": "docker", "limits": LIMITS}, **kwargs})


def containers_of(pid: int) -> list[Any]:
    """The containers (running or not) that the process ``pid`` of this host started."""
    label = f"{OWNER_LABEL}={socket.gethostname()}:{pid}"
    return engine_client().containers.list(all=True, filters={"label": label})


async def test_a_killed_container_ends_its_episode_as_a_task_error_and_the_next_episode_works() -> None:
    config = ControllerConfig(tasks=[docker_task(sandbox_pool=POOL)], sweep_sandboxes=False)
    async with running(config) as (controller, client):
        [(_, worker_pid, _)] = controller.supervisor.processes()
        assert worker_pid is not None
        wait_for(lambda: len(containers_of(worker_pid)) == 1, "1 warm container")
        started = await client.post("start_sample", json={"name": "os-docker", "index": 0})
        assert started.status_code == 200, started.text
        headers = {"session_id": started.headers["session_id"]}
        out = await client.post(
            "interact", headers=headers, json={"messages": [call("bash_action", '{"script": "id -u"}')]}
        )
        assert out.json()["status"] == "running" and "0" in out.json()["messages"][-1]["content"]

        wait_for(lambda: len(containers_of(worker_pid)) == 2, "the refill after the lease")
        for container in containers_of(worker_pid):  # the leased one and the idle one
            container.kill()
        out = await client.post(
            "interact", headers=headers, json={"messages": [call("bash_action", '{"script": "ls"}')]}
        )
        assert out.status_code == 200
        assert out.json()["finish"] is True and out.json()["status"] == "task error"
        assert out.json()["metrics"]["infra_error"] is True

        # the pool's health check replaces the dead idle container; a new episode runs normally
        again = await client.post("start_sample", json={"name": "os-docker", "index": 0})
        assert again.status_code == 200, again.text
        headers = {"session_id": again.headers["session_id"]}
        out = await client.post(
            "interact", headers=headers, json={"messages": [call("bash_action", '{"script": "echo alive"}')]}
        )
        assert out.json()["status"] == "running" and "alive" in out.json()["messages"][-1]["content"]
        await client.post("cancel", headers=headers)
    wait_for(lambda: gone(worker_pid), "the worker to exit")
    wait_for(lambda: not containers_of(worker_pid), "every container removed at shutdown")


def test_a_restarted_controller_removes_the_containers_a_killed_one_left(tmp_path: Path) -> None:
    server = start_server(tmp_path, [docker_task(sandbox_pool=POOL.model_copy(update={"warm": 2}))])
    try:
        worker_pid = _worker_pid(server.process.pid)
        wait_for(lambda: len(containers_of(worker_pid)) == 2, "2 warm containers")
        # kill -9 the worker and then its controller: nobody is left to stop the containers
        os.kill(worker_pid, signal.SIGKILL)
        server.process.send_signal(signal.SIGKILL)
        server.process.wait()
        wait_for(lambda: gone(worker_pid), "the worker to die")
        assert len(containers_of(worker_pid)) == 2  # orphans of a dead owner
    finally:
        stop_server(server)
    second = start_server(tmp_path, [docker_task(sandbox_pool=POOL.model_copy(update={"warm": 0}))])
    try:
        assert containers_of(worker_pid) == []
        assert "sandbox sweep: removed leftovers" in second.log.read_text()
    finally:
        stop_server(second)
