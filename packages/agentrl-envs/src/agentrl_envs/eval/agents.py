"""Agents the eval CLI can run: the task's oracle, a seeded random agent, and any OpenAI-compatible model.

An :class:`Agent` plays one episode at a time. The runner calls :meth:`Agent.begin` when an episode starts and
then :meth:`Agent.act` with the whole conversation so far, until the environment ends the episode. An
instance is reused for many episodes one after the other (one instance per concurrent slot and task), so an
agent keeps per-episode state only between ``begin`` calls. An agent that cannot go on raises
:class:`~agentrl_envs.eval.errors.AgentStop`.

``act`` returns the assistant message, or an :class:`AgentTurn` that also says which model produced it and
the tokens it cost (what :class:`MixedAgent` and the OpenAI agent do); the runner records both per turn.
"""

from __future__ import annotations

import asyncio
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.core.spaces import ActionSpace

__all__ = ["Agent", "AgentFactory", "AgentTurn", "MixedAgent", "OracleAgent", "RandomAgent", "episode_seed"]


@dataclass(frozen=True, slots=True)
class AgentTurn:
    """An assistant message with where it came from and what it cost."""

    message: Message
    model: str | None = None
    """The model (or agent) that produced the message."""
    prompt_tokens: int | None = None
    """Prompt tokens the server reported for this turn (``None``: not reported)."""
    completion_tokens: int | None = None
    """Completion tokens the server reported for this turn (``None``: not reported)."""


@runtime_checkable
class Agent(Protocol):
    """Chooses the next assistant message of an episode."""

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        """Start an episode of ``task`` on sample ``index`` (repeat ``run`` of it)."""
        ...

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message | AgentTurn:
        """The next assistant message, given the conversation so far and the task's OpenAI tool schemas."""
        ...


AgentFactory = Callable[[str, str], Agent]
"""Builds an agent for ``(task short name, split)``; the runner calls it once per concurrent slot and task."""


def episode_seed(seed: int, task: str, index: int, run: int) -> int:
    """A seed for one episode from ``(seed, task, index, run)``: the same whatever slot or order plays it."""
    entropy = [seed, zlib.crc32(task.encode()), index, run]
    return int(np.random.SeedSequence(entropy).generate_state(1)[0])


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
        self._episode_seed = episode_seed(self.seed, task, index, run)
        self._space = None

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        """A random action: plain text or one call to a random tool with random arguments."""
        if self._space is None or self._space.tools != tools:
            self._space = ActionSpace(tools, seed=self._episode_seed)
        action = self._space.sample()
        if isinstance(action, str):
            return {"role": "assistant", "content": action}
        return action


class MixedAgent:
    """Picks one of several agents for every turn, with fixed weights: the paper's inference-time cross-sampling.

    As the trainer's cross-policy sampler draws the engine of each turn, this draws the agent of each turn,
    from a generator seeded per episode by ``(seed, task, index, run)``, so the choice of turns does not depend
    on concurrency. Every turn is returned as an :class:`AgentTurn` naming the agent that played it.
    """

    def __init__(
        self, agents: Sequence[Agent], names: Sequence[str], *, weights: Sequence[float] | None = None, seed: int = 0
    ) -> None:
        """Mix ``agents``.

        Args:
            agents: Two or more agents; each sees the whole conversation, whoever played the earlier turns.
            names: The name recorded for each agent's turns (a model name).
            weights: Relative probability of each agent per turn; equal by default.
            seed: Base seed of the per-turn draws.

        Raises:
            ValueError: If the lengths differ, fewer than two agents are given, or a weight is negative or all are 0.
        """
        weights = [1.0] * len(agents) if weights is None else [float(w) for w in weights]
        if len(agents) < 2 or not len(agents) == len(names) == len(weights):
            raise ValueError(
                f"MixedAgent needs two or more agents with one name and one weight each; got {len(agents)} agents, "
                f"{len(names)} names and {len(weights)} weights."
            )
        if any(w < 0 for w in weights) or sum(weights) <= 0:
            raise ValueError(f"Mix weights must be >= 0 and not all 0, got {weights}.")
        self.agents = list(agents)
        self.names = list(names)
        self.weights = weights
        self.seed = seed
        self._rng = random.Random(seed)

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        """Seed this episode's draws and start the episode in every agent."""
        self._rng = random.Random(episode_seed(self.seed, task, index, run))
        await asyncio.gather(*(agent.begin(task, index, run=run) for agent in self.agents))

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        """The next turn, played by an agent drawn with the mix's weights."""
        [position] = self._rng.choices(range(len(self.agents)), weights=self.weights)
        turn = await self.agents[position].act(messages, tools)
        if isinstance(turn, AgentTurn):
            return AgentTurn(turn.message, self.names[position], turn.prompt_tokens, turn.completion_tokens)
        return AgentTurn(turn, self.names[position])
