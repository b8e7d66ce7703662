"""What one episode of an evaluation produced: the record written as a line of ``episodes.jsonl``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from agentrl_envs.core.messages import Message
from agentrl_envs.core.status import SampleStatus

__all__ = ["SUCCESS_SCORE", "EpisodeKey", "EpisodeRecord", "TurnLog"]

SUCCESS_SCORE = 1.0
"""An episode succeeds when its task score reaches full marks (DB: the right answer; KG: F1 = 1)."""


EpisodeKey = tuple[str, str, int, int]
"""``(task, split, index, run)``: what identifies an episode of an evaluation (``--resume`` skips by it)."""


@dataclass(slots=True)
class TurnLog:
    """Who played one assistant turn and what it cost (``None``: not known or not reported)."""

    model: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@dataclass(slots=True)
class EpisodeRecord:
    """One finished episode: outcome, transcript and timings."""

    task: str
    split: str
    index: int
    run: int
    status: SampleStatus = SampleStatus.RUNNING
    score: float = 0.0
    infra_error: bool = False
    error: str | None = None
    """Why the episode ended early: the infrastructure fault, or why the agent stopped."""
    rewards: list[float] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    """The environment's last ``info``, without the tool schemas (kept once per task, not per episode)."""
    timings: dict[str, Any] = field(default_factory=dict)
    """``started_at`` (Unix time), ``reset_s``, ``agent_s`` and ``env_s`` (one entry per turn), ``total_s``."""
    turns: list[TurnLog] = field(default_factory=list)
    """One entry per assistant turn: the model that played it and its token counts."""

    @property
    def key(self) -> EpisodeKey:
        """``(task, split, index, run)``."""
        return (self.task, self.split, self.index, self.run)

    @property
    def is_finished(self) -> bool:
        """Whether the episode has an outcome worth keeping: not cut short by the environment or the endpoint.

        Episodes that ended ``cancelled`` (the model endpoint stayed down, or Ctrl-C) or with an infrastructure
        error are played again by ``--resume``.
        """
        return not self.infra_error and self.status not in (SampleStatus.CANCELLED, SampleStatus.RUNNING)

    @property
    def usage(self) -> dict[str, int] | None:
        """Prompt and completion tokens summed over the turns; ``None`` if no turn reported any."""
        reported = [t for t in self.turns if t.prompt_tokens is not None or t.completion_tokens is not None]
        if not reported:
            return None
        prompt = sum(t.prompt_tokens or 0 for t in reported)
        completion = sum(t.completion_tokens or 0 for t in reported)
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    @property
    def reward(self) -> float:
        """The episode's return: the sum of its step rewards."""
        return float(sum(self.rewards))

    @property
    def success(self) -> bool:
        """Whether the environment scored the episode full marks."""
        return not self.infra_error and self.score >= SUCCESS_SCORE

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """Every tool call the agent made, in order."""
        return [call for m in self.messages if m.get("role") == "assistant" for call in m.get("tool_calls") or []]

    def to_json(self) -> dict[str, Any]:
        """The record as one ``episodes.jsonl`` object."""
        data = asdict(self)
        data.update(reward=self.reward, success=self.success, tool_calls=self.tool_calls, usage=self.usage)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EpisodeRecord:
        """A record read back from its ``episodes.jsonl`` object (derived keys are recomputed)."""
        names = {f.name for f in fields(cls)}
        record = cls(**{key: value for key, value in data.items() if key in names and key != "turns"})
        record.status = SampleStatus(record.status)
        record.turns = [TurnLog(**turn) for turn in data.get("turns") or []]
        return record
