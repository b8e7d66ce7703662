"""Fixtures of the DB task tests: env factories per backend and the private MariaDB server.

The ``mariadb`` server is the session's (``tests/agentrl_envs/conftest.py``); tests that use it are marked
``mariadb``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest

import agentrl_envs  # noqa: F401 - registers AgentBench/DB-v0
from agentrl_envs.tasks.db.env import DBEnv

BACKENDS = ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each backend in turn (``mariadb`` starts the session's server)."""
    if request.param == "mariadb":
        request.getfixturevalue("mariadb_server")
    return request.param


@pytest.fixture
def make_env(backend: str) -> Iterator[Callable[..., DBEnv]]:
    """Build ``AgentBench/DB-v0`` envs on the current backend; all are closed after the test."""
    envs: list[DBEnv] = []

    def make(**options: Any) -> DBEnv:
        env = gym.make("AgentBench/DB-v0", backend=backend, **options).unwrapped
        assert isinstance(env, DBEnv)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def call(name: str, arguments: Any, call_id: str = "c1") -> dict[str, Any]:
    """One tool call; ``arguments`` is sent as given when it is a string, else JSON-encoded."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}


def reply(*calls: dict[str, Any]) -> dict[str, Any]:
    """An assistant message with these tool calls."""
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def sql(query: str, call_id: str = "c1") -> dict[str, Any]:
    """An assistant message running one statement."""
    return reply(call("execute_sql", {"query": query}, call_id))


def commit(answers: list[str]) -> dict[str, Any]:
    """An assistant message committing answers."""
    return reply(call("commit_final_answer", {"answers": answers}))
