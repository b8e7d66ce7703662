"""What one episode of an evaluation produced: the record written as a line of ``episodes.jsonl``."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agentrl_envs.core.messages import Message

__all__ = ["SUCCESS_SCORE", "EpisodeRecord"]

SUCCESS_SCORE = 1.0
"""An episode succeeds when its task score reaches full marks (DB: the right answer; KG: F1 = 1)."""


@dataclass(slots=True)
class EpisodeRecord:
    """One finished episode: outcome, transcript and timings."""

    task: str
    split: str
    index: int
    run: int
    status: str = "running"
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
        data.update(reward=self.reward, success=self.success, tool_calls=self.tool_calls)
        return data
