"""Controllers for tests: in-process (httpx.ASGITransport) over real local worker processes."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml

from agentrl_controller.api.app import create_app
from agentrl_controller.config import ControllerConfig, TaskConfig
from agentrl_controller.controller import Controller

TOY = "tests.agentrl_envs.core.toy_env:ToyEnv"
NOOP = "agentrl_controller.workers.noop:NoopEnv"


def toy_task(**kwargs: Any) -> TaskConfig:
    return TaskConfig(**{"name": "toy-std", "env": TOY, "aliases": ["toy"], "concurrency": 8, **kwargs})


def noop_task(**kwargs: Any) -> TaskConfig:
    return TaskConfig(**{"name": "noop", "env": NOOP, "concurrency": 64, **kwargs})


@asynccontextmanager
async def running(config: ControllerConfig) -> AsyncIterator[tuple[Controller, httpx.AsyncClient]]:
    """A started controller and a client bound to its app in-process."""
    controller = Controller(config)
    app = create_app(controller, manage_lifecycle=False)
    await controller.start()
    transport = httpx.ASGITransport(app=app)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver/api/") as client:
            yield controller, client
    finally:
        await controller.stop()


@pytest.fixture
def make_controller() -> Callable[..., Any]:
    """``async with make_controller(tasks=[...], **settings) as (controller, client)``."""

    def factory(**settings: Any) -> Any:
        settings.setdefault("tasks", [toy_task(), noop_task()])
        return running(ControllerConfig(**settings))

    return factory


def call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    """An assistant message with one tool call."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}],
    }


def shared_tasks() -> list[TaskConfig]:
    """The tasks of the module-wide controller; each test uses its own task names so tests do not interfere."""
    eager = [
        toy_task(),
        toy_task(name="toy-one", aliases=[], concurrency=1),
        toy_task(name="toy-two", aliases=[], workers=2, lazy=False),
        toy_task(name="failing", aliases=[], options={"fail_on": "start"}),
        toy_task(name="broken", aliases=[], env="no_such_module:Env"),
        noop_task(name="slow", options={"delay_s": 2.0}),
    ]
    return [task.model_copy(update={"lazy": task.name == "broken"}) for task in eager]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared() -> AsyncIterator[tuple[Controller, httpx.AsyncClient]]:
    """One controller (and its worker processes) for a whole test module: starting workers costs seconds."""
    config = ControllerConfig(
        tasks=shared_tasks(), workers={"restart_backoff_s": 0.0}, sessions={"sweep_interval_s": 0.1}
    )
    async with running(config) as pair:
        yield pair


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    """A real ``agentrl-controller serve`` process."""

    process: subprocess.Popen[bytes]
    url: str
    """Base URL including ``/api``."""
    log: Path


def start_server(tmp_path: Path, tasks: list[TaskConfig], env: dict[str, str] | None = None, **settings: Any) -> Server:
    """Run the CLI with a YAML config (and ``env``, else ours) and wait until ``/healthz`` answers."""
    port = free_port()
    config = {"tasks": [t.model_dump() for t in tasks], **settings}
    config_path = tmp_path / "controller.yaml"
    config_path.write_text(yaml.safe_dump(config))
    log = tmp_path / "controller.log"
    command = [sys.executable, "-m", "agentrl_controller.cli", "serve", "--config", str(config_path)]
    with log.open("wb") as out:
        process = subprocess.Popen([*command, "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env=env)
    server = Server(process, f"http://127.0.0.1:{port}/api", log)
    auth = {"Authorization": f"Bearer {settings['token']}"} if settings.get("token") else {}
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", headers=auth, timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"controller did not come up: {log.read_text()}")


def stop_server(server: Server) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(30)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A real controller serving the toy and no-op tasks, for a whole module."""
    tasks = [toy_task(lazy=False), noop_task(lazy=False)]
    server = start_server(tmp_path_factory.mktemp("controller"), tasks)
    yield server
    stop_server(server)
