"""Fixtures of the ALFWorld tests: the test split's games (generated once, cached under the cache dir) and env
factories. Under ``make test`` the cache dir persists, so only the first run pays for generation."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest

import agentrl_envs  # noqa: F401 - registers AgentBench/ALFWorld-v0
from agentrl_envs.core.data import DataRoot
from agentrl_envs.tasks.alfworld.env import AlfworldEnv
from agentrl_envs.tasks.alfworld.games import prepare_games, split_entries

WORKERS = max(1, min(4, os.cpu_count() or 1))
GENERATION_TIMEOUT = 1800
"""Per-test limit for the tests that may generate games on a cold cache (about a second of CPU per game; the
first test to use ``test_games`` pays for all 109, the train-sample test for 200 more)."""


@pytest.fixture(scope="session")
def test_games(data_root: object) -> list[str]:
    """The test split's entries, with every game generated and cached."""
    data = DataRoot.find()
    paths = split_entries(data, "test")
    prepare_games(data, paths, workers=WORKERS)
    return paths


@pytest.fixture
def make_env(test_games: list[str]) -> Iterator[Callable[..., AlfworldEnv]]:
    """Build ``AgentBench/ALFWorld-v0`` envs; all are closed after the test."""
    envs: list[AlfworldEnv] = []

    def make(**options: Any) -> AlfworldEnv:
        env = gym.make("AgentBench/ALFWorld-v0", **options).unwrapped
        assert isinstance(env, AlfworldEnv)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def call(arguments: dict[str, Any] | str, name: str = "take_action", call_id: str = "call_1") -> dict[str, Any]:
    """An assistant message with one tool call."""
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    function = {"name": name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": call_id, "type": "function", "function": function}],
    }


def act(command: str) -> dict[str, Any]:
    """``take_action(command)``."""
    return call({"action": command})
