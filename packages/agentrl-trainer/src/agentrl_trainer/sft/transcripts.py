"""Transcripts to learn from: oracle episodes played through the environments, or a JSONL of recorded ones.

A transcript is what an environment saw: its reset messages, then assistant messages and the environment's
answers, with the task's tool schemas. Oracle transcripts are played here through the same environments the
trainer uses (so the observations are exactly those of a rollout); recorded ones are read from a JSONL such
as ``agentrl-eval``'s ``episodes.jsonl`` (any agent, e.g. a strong model behind an OpenAI-compatible server).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl_envs.core import InfraError

__all__ = ["Transcript", "kept", "play_oracle", "read_transcripts", "record_oracle", "tools_from_env"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class Transcript:
    """One recorded episode: its conversation, the tools it was played with, and its score."""

    task: str
    split: str
    index: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    score: float | None = None
    names: dict[str, str] | None = None
    """The task's names to copy from the prompt, by kind (the env's ``copyable_names``), where it declares them."""


def play_oracle(
    env: Any, oracle: Any, index: int, first: list[dict[str, Any]], max_turns: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Play ``oracle`` on sample ``index`` of ``env`` (already reset to ``first``); the new messages and last info."""
    messages: list[dict[str, Any]] = []
    observation, info = first, {}
    oracle.begin(index)
    for _ in range(max_turns):
        action = oracle.act(observation)
        messages.append(action)
        observation, _, terminated, truncated, info = env.step(action)
        messages.extend(observation)
        if terminated or truncated:
            break
    return messages, info


def record_oracle(
    env_factory: Callable[[str, str], Any],
    task: str,
    split: str,
    *,
    max_samples: int | None = None,
    max_turns: int = 30,
    **oracle_options: Any,
) -> list[Transcript]:
    """Play the task's oracle on the first ``max_samples`` samples of ``split``; samples that cannot start are skipped.

    Raises:
        UnknownTaskError: If the task has no oracle.
    """
    from agentrl_envs.core.oracle import load_oracle

    oracle = load_oracle(task, split=split, **oracle_options)
    env = env_factory(task, split)
    copyable = getattr(getattr(env, "unwrapped", env), "copyable_names", None)
    transcripts = []
    try:
        count = env.num_samples() if max_samples is None else min(max_samples, env.num_samples())
        for index in range(count):
            try:
                first, info = env.reset(options={"index": index})
            except InfraError as e:
                logger.warning("task=%s split=%s index=%d cannot start, not recorded: %s", task, split, index, e)
                continue
            tools = info.get("tools") or None
            played, last = play_oracle(env, oracle, index, first, max_turns)
            score = float(last.get("score") or 0.0) if not last.get("infra_error") else None
            names = copyable(index) if copyable is not None else None
            transcripts.append(Transcript(task, split, index, [*first, *played], tools, score, names))
    finally:
        env.close()
    return transcripts


def read_transcripts(path: Path, tools_of: Callable[[str, str], list[dict[str, Any]] | None]) -> list[Transcript]:
    """Read a JSONL of transcripts: rows with ``messages`` and ``task`` (``split``, ``index``, ``tools``, ``score``).

    ``agentrl-eval``'s ``episodes.jsonl`` is such a file; its rows carry no tools (they are the task's), so
    ``tools_of(task, split)`` supplies them. Rows that ended in an infrastructure error are skipped.

    Raises:
        ValueError: If a line is not a JSON object with a ``messages`` list and a ``task``.
    """
    transcripts = []
    tools_cache: dict[tuple[str, str], list[dict[str, Any]] | None] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        if not isinstance(row, dict) or not isinstance(row.get("messages"), list) or not row.get("task"):
            raise ValueError(f"{path}:{number}: expected a JSON object with 'task' and a 'messages' list.")
        if row.get("infra_error"):
            continue
        task, split = str(row["task"]), str(row.get("split") or "train")
        tools = row.get("tools")
        if tools is None:
            if (task, split) not in tools_cache:
                tools_cache[(task, split)] = tools_of(task, split)
            tools = tools_cache[(task, split)]
        score = row.get("score")
        transcripts.append(
            Transcript(task, split, int(row.get("index", number - 1)), row["messages"], tools, _float(score))
        )
    return transcripts


def tools_from_env(env_factory: Callable[[str, str], Any]) -> Callable[[str, str], list[dict[str, Any]] | None]:
    """``(task, split) -> tools`` read from a fresh environment of the task (its ``tools`` attribute)."""

    def tools_of(task: str, split: str) -> list[dict[str, Any]] | None:
        env = env_factory(task, split)
        try:
            return list(env.tools) or None
        finally:
            env.close()

    return tools_of


def kept(transcripts: Iterable[Transcript], *, min_score: float, max_per_task: int | None) -> list[Transcript]:
    """Transcripts scoring at least ``min_score`` (unscored ones are kept), at most ``max_per_task`` per task."""
    out: list[Transcript] = []
    per_task: dict[str, int] = {}
    for transcript in transcripts:
        if transcript.score is not None and transcript.score < min_score:
            continue
        if max_per_task is not None and per_task.get(transcript.task, 0) >= max_per_task:
            continue
        per_task[transcript.task] = per_task.get(transcript.task, 0) + 1
        out.append(transcript)
    return out


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
