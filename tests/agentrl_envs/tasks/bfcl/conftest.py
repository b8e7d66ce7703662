"""Fixtures of the BFCL tests: the pinned wheel's extracted tree and a player of whole episodes.

The tree is the one in ``$AGENTRL_CACHE_DIR`` (CI fetches it ahead, ``scripts/bootstrap.sh``); an empty cache
is filled from PyPI, or from ``$AGENTRL_BFCL_FROM`` (a local copy of the wheel), once per session.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import agentrl_envs
from agentrl_envs.core.messages import Message
from agentrl_envs.tasks.bfcl.env import BFCLEnv
from agentrl_envs.tasks.bfcl.fetch import ensure_bfcl

SHORT_NAMES = ["bfcl_base", "bfcl_miss_func", "bfcl_miss_param", "bfcl_long_context"]


@pytest.fixture(scope="session")
def bfcl_root() -> Path:
    """The extracted BFCL tree (fetched into the cache if missing)."""
    return ensure_bfcl()


@pytest.fixture
def make_env(bfcl_root: Path) -> Callable[..., BFCLEnv]:
    """Unwrapped BFCL envs, closed at the end of the test."""
    made: list[BFCLEnv] = []

    def make(task: str = "bfcl_base", **kwargs: Any) -> BFCLEnv:
        env = agentrl_envs.make(task, **kwargs).unwrapped
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


def play(env: BFCLEnv, index: int, act: Callable[[list[Message]], Message]) -> tuple[float, dict[str, Any]]:
    """Play sample ``index`` to its end; returns the last reward and info."""
    observation, info = env.reset(options={"index": index})
    reward, done = 0.0, False
    while not done:
        observation, reward, terminated, truncated, info = env.step(act(observation))
        done = terminated or truncated
    return reward, info


def call(name: str, call_id: str = "c1", **arguments: object) -> Message:
    """An assistant message with one tool call."""
    tool_call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [tool_call]}
