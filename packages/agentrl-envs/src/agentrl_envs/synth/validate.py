"""Validation of candidate tasks by the environment itself.

A candidate is kept only if, played through its task's env (loaded with the candidates as a ``train_file``):

1. the task's oracle, playing the reference solution, earns reward 1;
2. an **empty** answer earns 0 (DB: commit nothing, and commit ``[""]``; OS: answer ``""``; KG: answer
   before any variable exists);
3. a **wrong** answer earns 0 (DB: a changed label, or a table wiped by ``DELETE``; OS: the oracle's answer
   changed, without running its commands; KG: a variable one step short of the answer, or a neighbour
   through another relation).

Each task has a :class:`TaskAdapter` that knows its file format, its env and oracle, and its foils (the
scripted players of 2 and 3). Rejections are counted by reason: ``malformed``, ``oracle_failed``,
``empty_accepted``, ``wrong_accepted``, ``env_error`` (the env could not start the sample) and the reasons
the adapter's preparation gives.
"""

from __future__ import annotations

import json
import logging
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.env import ToolEnv
from agentrl_envs.core.errors import InfraError
from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.synth.types import Candidate, Rejection

__all__ = ["Player", "ScriptedPlayer", "TaskAdapter", "call", "play", "validate"]

logger = logging.getLogger(__name__)


class Player(ABC):
    """Plays one episode at a time, as an :class:`~agentrl_envs.core.oracle.Oracle` does."""

    @abstractmethod
    def begin(self, index: int) -> None:
        """Prepare for sample ``index``."""

    @abstractmethod
    def act(self, observation: list[Message]) -> Message:
        """The next assistant message, given the messages the env just returned."""


class ScriptedPlayer(Player):
    """A player whose moves are computed from the last observation by ``moves(step, observation)``."""

    def __init__(self, moves: Callable[[int, list[Message]], Message]) -> None:
        """Wrap ``moves``."""
        self.moves = moves
        self.step = 0

    def begin(self, index: int) -> None:
        """Restart the script."""
        self.step = 0

    def act(self, observation: list[Message]) -> Message:
        """The script's next move."""
        self.step += 1
        return self.moves(self.step - 1, observation)


def play(env: ToolEnv, player: Player | Any, index: int) -> tuple[float, dict[str, Any], list[Message]]:
    """Play sample ``index`` to its end; the final reward, ``info`` and the whole transcript."""
    observation, info = env.reset(options={"index": index})
    player.begin(index)
    reward = 0.0
    for _ in range(env.max_rounds):
        observation, reward, terminated, truncated, info = env.step(player.act(observation))
        if terminated or truncated:
            break
    return float(reward), info, list(env.messages)


def call(name: str, **arguments: Any) -> Message:
    """An assistant message with one tool call."""
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": f"foil_{name}", "type": "function", "function": function}],
    }


class TaskAdapter(ABC):
    """What validation needs to know about one task."""

    task: str
    suffix: str
    """The file format: ``.jsonl`` (one sample a line) or ``.json`` (a list)."""

    def __init__(self, data: DataRoot, **env_options: Any) -> None:
        """Remember the data root and the options every env and oracle gets (e.g. a backend)."""
        self.data = data
        self.env_options = env_options

    @abstractmethod
    def prepare(self, sample: dict[str, Any]) -> Rejection | None:
        """Check (and complete, e.g. a computed label) one sample in place; why it is unusable, if it is."""

    @abstractmethod
    def make_env(self, path: Path) -> ToolEnv:
        """The env on the ``train`` split read from ``path``."""

    @abstractmethod
    def foils(self, sample: dict[str, Any], gold: list[Message]) -> dict[str, Player]:
        """The ``empty`` and ``wrong`` players of a sample, given the oracle's transcript."""

    def oracle_options(self) -> dict[str, Any]:
        """Options of the oracle besides the train file."""
        return {}

    def write(self, samples: list[dict[str, Any]], path: Path) -> Path:
        """Write samples in the task's upstream file format."""
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.suffix == ".jsonl":
            text = "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples)
        else:
            text = json.dumps(samples, ensure_ascii=False, indent=1)
        path.write_text(text, encoding="utf-8")
        return path

    def oracle_success(self, path: Path) -> float:
        """Share of the samples in ``path`` whose oracle episode earns reward 1."""
        env = self.make_env(path)
        try:
            oracle = load_oracle(self.task, split="train", data_root=str(self.data.path), train_file=str(path))
            rewards = [play(env, oracle, i)[0] for i in range(env.num_samples())]
        finally:
            env.close()
        return sum(r == 1.0 for r in rewards) / len(rewards) if rewards else 1.0


def validate(adapter: TaskAdapter, candidates: list[Candidate]) -> list[Rejection | None]:
    """The verdict on each candidate (``None``: kept), in order; see the module docstring."""
    verdicts: list[Rejection | None] = [_prepare(adapter, c.sample) for c in candidates]
    ready = [i for i, v in enumerate(verdicts) if v is None]
    if not ready:
        return verdicts
    with tempfile.TemporaryDirectory(prefix="agentrl-synth-") as scratch:
        path = adapter.write([candidates[i].sample for i in ready], Path(scratch) / f"candidates{adapter.suffix}")
        env = adapter.make_env(path)
        try:
            oracle = load_oracle(
                adapter.task, split="train", data_root=str(adapter.data.path), train_file=str(path),
                **adapter.oracle_options(),
            )  # fmt: skip
            for index, position in enumerate(ready):
                verdicts[position] = _judge(adapter, env, oracle, index, candidates[position].sample)
        finally:
            env.close()
    return verdicts


def _prepare(adapter: TaskAdapter, sample: dict[str, Any]) -> Rejection | None:
    try:
        return adapter.prepare(sample)
    except InfraError as e:  # the engine that computes gold answers failed, not the proposal
        return Rejection("env_error", f"{type(e).__name__}: {e}")
    except Exception as e:  # a proposal is untrusted input: any way it breaks the checks makes it malformed
        return Rejection("malformed", f"{type(e).__name__}: {e}")


def _judge(adapter: TaskAdapter, env: ToolEnv, oracle: Any, index: int, sample: dict[str, Any]) -> Rejection | None:
    try:
        try:
            return _play_all(adapter, env, oracle, index, sample)
        except InfraError as e:  # e.g. a sandbox's setup killed from outside: once more before dropping it
            logger.info("%s candidate %d: %s; validating it again", adapter.task, index, e)
            return _play_all(adapter, env, oracle, index, sample)
    except Exception as e:  # the env could not run this sample (e.g. a table MySQL refuses): drop it, go on
        logger.debug("%s candidate %d broke the env: %s", adapter.task, index, e)
        return Rejection("env_error", f"{type(e).__name__}: {e}")


def _play_all(adapter: TaskAdapter, env: ToolEnv, oracle: Any, index: int, sample: dict[str, Any]) -> Rejection | None:
    reward, info, transcript = play(env, oracle, index)
    if reward != 1.0:
        return Rejection("oracle_failed", f"status {info.get('status')}, {info.get('error', '')}".strip(", "))
    for name, foil in adapter.foils(sample, transcript).items():
        reward, info, _ = play(env, foil, index)
        if reward != 0.0:
            # The oracle's last action says whether the task itself has an empty or trivial gold answer.
            detail = f"the {name} answer earned {reward}; the oracle's last action: {_last_action(transcript)}"
            return Rejection(f"{name.split(':')[0]}_accepted", detail)
    return None


def _last_action(transcript: list[Message]) -> str:
    for message in reversed(transcript):
        calls = message.get("tool_calls") or []
        if message.get("role") == "assistant" and calls:
            function = calls[-1]["function"]
            return f"{function['name']}({function['arguments']})"[:300]
    return "none"
