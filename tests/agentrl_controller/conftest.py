"""Controllers for tests: in-process (httpx.ASGITransport) over real local worker processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import pytest_asyncio

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
