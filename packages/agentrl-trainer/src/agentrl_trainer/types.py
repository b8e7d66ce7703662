"""Carriers of rollout data: one generation, one turn, one episode (trajectory) and one GRPO group."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # importing agentrl_envs registers every task: an engine process does without it
    from agentrl_envs.core.status import SampleStatus

__all__ = ["Generation", "Group", "InfraFault", "TokenSegment", "Trajectory", "TrainingRow"]


@dataclass(frozen=True, slots=True)
class TrainingRow:
    """One training sample: a task, a split and a sample index (the paper's training row)."""

    task: str
    split: str
    index: int


@dataclass(frozen=True, slots=True)
class Generation:
    """What a rollout engine sampled for one prompt: the exact token ids, their log-probs and who made them."""

    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    version: int
    """Policy version (optimizer steps applied) of the weights that sampled these tokens."""
    engine: str
    finish_reason: str
    """``stop`` (end-of-turn token sampled) or ``length`` (token budget exhausted)."""
    token_versions: tuple[int, ...] = ()
    """Partial rollouts: the policy version that sampled each token, when a weight update landed mid-turn and
    the rest of the turn was sampled with the new weights (``version`` is then the oldest, the first token's).
    Empty when one version sampled the whole turn."""

    @property
    def versions_per_token(self) -> tuple[int, ...]:
        """The policy version that sampled each token (``version`` for every token unless the turn was resumed)."""
        return self.token_versions or (self.version,) * len(self.token_ids)


@dataclass(frozen=True, slots=True)
class TokenSegment:
    """A run of tokens in an episode: the model's own (``is_action``) or the environment's (masked out of the loss)."""

    token_ids: tuple[int, ...]
    is_action: bool
    logprobs: tuple[float, ...] = ()
    version: int = -1
    engine: str = ""
    lagged: bool = False
    """Sampled by a lagged engine (cross-policy sampling): its lag is by design, not asynchrony."""
    token_versions: tuple[int, ...] = ()
    """Partial rollouts: each token's policy version when the turn was resumed with newer weights (``version``
    is the oldest of them, the one staleness counts); empty when ``version`` sampled every token."""


@dataclass(frozen=True, slots=True)
class InfraFault:
    """Why an episode's infrastructure failed: where, the exception type, its message and (when known) traceback."""

    task: str
    index: int
    phase: str
    """``reset`` (the sample could not start), ``step`` (the environment failed on an action) or ``engine``."""
    error_type: str
    message: str
    traceback: str = ""

    @property
    def kind(self) -> str:
        """The fault's kind, counted in ``rollout/infra_errors/<kind>``: ``<task>/<phase>/<error type>``."""
        return f"{self.task}/{self.phase}/{self.error_type}"


def _running() -> SampleStatus:
    from agentrl_envs.core.status import SampleStatus

    return SampleStatus.RUNNING


@dataclass(slots=True)
class Trajectory:
    """One finished episode: prompt tokens, then alternating action and environment segments."""

    row: TrainingRow
    prompt_ids: list[int]
    segments: list[TokenSegment] = field(default_factory=list[TokenSegment])
    reward: float = 0.0
    env_reward: float = 0.0
    score: float = 0.0
    status: SampleStatus = field(default_factory=_running)
    turns: int = 0
    infra_error: bool = False
    fault: InfraFault | None = None
    """What failed, when ``infra_error`` is set."""
    retries: int = 0
    duration_s: float = 0.0
    messages: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    @property
    def completion_ids(self) -> list[int]:
        """Every token after the prompt, actions and environment alike."""
        return [t for s in self.segments for t in s.token_ids]

    @property
    def action_mask(self) -> list[int]:
        """1 for tokens the model sampled, 0 for environment tokens."""
        return [int(s.is_action) for s in self.segments for _ in s.token_ids]

    @property
    def sampling_logprobs(self) -> list[float]:
        """Per completion token, the log-prob under the engine that sampled it (0 for environment tokens)."""
        return [lp for s in self.segments for lp in (s.logprobs if s.is_action else (0.0,) * len(s.token_ids))]

    @property
    def versions(self) -> list[int]:
        """Policy version of each action segment, in order."""
        return [s.version for s in self.segments if s.is_action]

    @property
    def policy_versions(self) -> list[int]:
        """Policy version of each action segment sampled by the current-policy engine (not a lagged one)."""
        return [s.version for s in self.segments if s.is_action and not s.lagged]

    @property
    def lagged_versions(self) -> list[int]:
        """Policy version of each action segment sampled by a lagged engine."""
        return [s.version for s in self.segments if s.is_action and s.lagged]

    @property
    def engines(self) -> list[str]:
        """Engine name of each action segment, in order."""
        return [s.engine for s in self.segments if s.is_action]

    @property
    def action_tokens(self) -> int:
        """How many tokens the model produced."""
        return sum(len(s.token_ids) for s in self.segments if s.is_action)

    @property
    def is_finished(self) -> bool:
        """Whether the episode ended by the agent's doing (completed or failed), not by a limit."""
        return self.status.is_terminated


@dataclass(slots=True)
class Group:
    """G episodes of one sample: the unit GRPO's baseline is computed over and the queue carries."""

    row: TrainingRow
    trajectories: list[Trajectory]
    created_version: int
    weight: float = 1.0
    """Multiplier on the group's advantages (below 1 when a stale group is down-weighted)."""

    @property
    def min_version(self) -> int:
        """Oldest policy version that produced a turn of the group, lagged engines' turns aside.

        Lagged engines lag by design (up to ``lagged_refresh_steps``); staleness measures the lag asynchrony adds.
        """
        versions = [v for t in self.trajectories for v in t.policy_versions]
        return min(versions) if versions else self.created_version

    def staleness(self, current_version: int) -> int:
        """How many optimizer steps the group's oldest current-policy turn lags behind ``current_version``."""
        return max(0, current_version - self.min_version)
