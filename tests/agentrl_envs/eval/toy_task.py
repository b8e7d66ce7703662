"""A test-only task for the eval CLI: the core tests' ToyEnv with a gold oracle and an optional flaky backend."""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

import gymnasium as gym

from agentrl_envs.core import AssistantMessage, Oracle, TaskSpec, Turn
from agentrl_envs.core.messages import Message
from agentrl_envs.core.registry import TASKS

from ..core.toy_env import ToyEnv

ENV_ID = "Test/Toy-v0"
SPEC = TaskSpec(
    "toy",
    ENV_ID,
    "toy",
    "toy",
    "tests.agentrl_envs.eval.toy_task:EvalToyEnv",
    "tests.agentrl_envs.eval.toy_task:ToyOracle",
)
FLAKY_START, FLAKY_STEP = 1, 2
"""With ``backend="flaky"``, sample 1 cannot start and sample 2's first step fails (infrastructure faults)."""


class EvalToyEnv(ToyEnv):
    """ToyEnv with a ``backend`` option: ``flaky`` makes two samples fail the way a broken backend would."""

    def __init__(self, *, backend: str = "ok", **kwargs: Any) -> None:
        if backend not in ("ok", "flaky"):
            raise ValueError(f"unknown toy backend {backend!r}")
        self.backend = backend
        super().__init__(**kwargs)

    @property
    def backend_name(self) -> str | None:
        return self.backend

    def _start(self, index: int) -> list[dict[str, Any]]:
        if self.backend == "flaky" and index == FLAKY_START:
            raise ConnectionError("toy backend refused the connection")
        return super()._start(index)

    def _respond(self, message: AssistantMessage) -> Turn:
        if self.backend == "flaky" and self.index == FLAKY_STEP:
            raise ConnectionError("toy backend went away")
        return super()._respond(message)


def call(name: str, call_id: str = "c1", **arguments: object) -> Message:
    """An assistant message with one tool call."""
    tool_call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [tool_call]}


def sample_index(messages: list[Message]) -> int:
    """The toy sample's number, read from its first user message ("Sample 3.")."""
    text = next(m["content"] for m in messages if m["role"] == "user")
    return int(re.search(r"Sample (\d+)", text).group(1))


class ToyOracle(Oracle):
    """Echoes once, then answers the sample's number. ``TOY_ORACLE_DELAY_S`` slows each move (Ctrl-C tests)."""

    def begin(self, index: int) -> None:
        self.index = index

    def act(self, observation: list[Message]) -> Message:
        time.sleep(float(os.environ.get("TOY_ORACLE_DELAY_S", "0")))
        if any(m["role"] == "tool" for m in observation):
            return call("answer", value=self.index)
        return call("echo", text="thinking")


def register() -> None:
    """Add the toy task to the task table and Gymnasium (undo with :func:`unregister`)."""
    TASKS[SPEC.short_name] = SPEC
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point=SPEC.entry_point)


def unregister() -> None:
    """Remove what :func:`register` added."""
    TASKS.pop(SPEC.short_name, None)
    gym.registry.pop(ENV_ID, None)


def main(argv: list[str]) -> int:
    """``agentrl-eval`` with the toy task registered, for subprocess tests."""
    from agentrl_envs.eval.cli import main as eval_main

    register()
    return eval_main(argv)


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
