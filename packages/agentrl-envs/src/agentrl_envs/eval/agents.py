"""Agents the eval CLI can run: the task's oracle, a seeded random agent, and any OpenAI-compatible model.

An :class:`Agent` plays one episode at a time. The runner calls :meth:`Agent.begin` when an episode starts and
then :meth:`Agent.act` with the whole conversation so far, until the environment ends the episode. An
instance is reused for many episodes one after the other (one instance per concurrent slot and task), so an
agent keeps per-episode state only between ``begin`` calls. An agent that cannot go on raises
:class:`~agentrl_envs.eval.errors.AgentStop`.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.core.spaces import ActionSpace

__all__ = ["Agent", "AgentFactory", "OracleAgent", "RandomAgent"]


@runtime_checkable
class Agent(Protocol):
    """Chooses the next assistant message of an episode."""

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        """Start an episode of ``task`` on sample ``index`` (repeat ``run`` of it)."""
        ...

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        """The next assistant message, given the conversation so far and the task's OpenAI tool schemas."""
        ...


AgentFactory = Callable[[str, str], Agent]
"""Builds an agent for ``(task short name, split)``; the runner calls it once per concurrent slot and task."""


def new_messages(messages: list[Message]) -> list[Message]:
    """The messages after the last assistant message (all of them at the start of an episode)."""
    for position in range(len(messages) - 1, -1, -1):
        if messages[position].get("role") == "assistant":
            return messages[position + 1 :]
    return list(messages)


class OracleAgent:
    """Plays the gold solution through the task's :class:`~agentrl_envs.core.oracle.Oracle`."""

    def __init__(self, task: str, *, split: str = "test", data_root: str | None = None, **options: Any) -> None:
        """Load the task's oracle.

        Args:
            task: Task name (short name, env id or upstream name).
            split: The split whose gold solutions are played.
            data_root: The AgentBench data root.
            **options: Task options the oracle shares with the env (e.g. a train file path).
        """
        self.oracle = load_oracle(task, split=split, data_root=data_root, **options)

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        """Prepare the oracle for sample ``index``."""
        await asyncio.to_thread(self.oracle.begin, index)

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        """The oracle's next move, given what the environment answered to its last one."""
        return await asyncio.to_thread(self.oracle.act, new_messages(messages))


class RandomAgent:
    """Random text or random tool calls from the task's :class:`~agentrl_envs.core.spaces.ActionSpace`.

    Each episode is seeded from ``(seed, task, index, run)``, so results do not depend on which concurrent
    slot played an episode or in what order.
    """

    def __init__(self, *, seed: int = 0) -> None:
        """Create the agent.

        Args:
            seed: Base seed of every episode's random choices.
        """
        self.seed = seed
        self._episode_seed = seed
        self._space: ActionSpace | None = None

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        """Derive the episode's seed; the action space is built on the first :meth:`act`."""
        entropy = [self.seed, zlib.crc32(task.encode()), index, run]
        self._episode_seed = int(np.random.SeedSequence(entropy).generate_state(1)[0])
        self._space = None

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        """A random action: plain text or one call to a random tool with random arguments."""
        if self._space is None or self._space.tools != tools:
            self._space = ActionSpace(tools, seed=self._episode_seed)
        action = self._space.sample()
        if isinstance(action, str):
            return {"role": "assistant", "content": action}
        return action
