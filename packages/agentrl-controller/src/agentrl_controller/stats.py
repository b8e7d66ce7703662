"""What the dashboard shows beyond the live workers and sessions: finished episodes per task, sessions over time.

Kept in memory by the session manager as sessions end (Prometheus counters hold the same counts, but a page
cannot ask them for a success rate). An episode succeeds as in ``agentrl-eval``: not an infrastructure error,
and a score of full marks.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from agentrl_envs.core.status import SampleStatus
from agentrl_envs.eval.records import SUCCESS_SCORE

__all__ = ["EpisodeStats", "HistoryPoint", "TaskEpisodes"]


@dataclass(frozen=True, slots=True)
class HistoryPoint:
    """The controller at one moment."""

    time: float
    """Unix time."""
    open_sessions: int
    interacts: int
    """Interact calls answered since start."""


@dataclass(frozen=True, slots=True)
class TaskEpisodes:
    """One task's finished episodes."""

    finished: int
    statuses: dict[str, int]
    successes: int
    infra_errors: int

    @property
    def success_rate(self) -> float | None:
        """Successes over the episodes that were not infrastructure errors (``None`` if there are none)."""
        scored = self.finished - self.infra_errors
        return self.successes / scored if scored else None


class EpisodeStats:
    """Counts of finished episodes per task and a bounded history of open sessions."""

    def __init__(
        self, *, max_points: int = 360, min_interval_s: float = 1.0, clock: Callable[[], float] = time.time
    ) -> None:
        """Start empty.

        Args:
            max_points: History points kept (older ones are dropped).
            min_interval_s: A sample closer than this to the previous one is skipped (many viewers, one history).
            clock: Unix time (tests pass their own).
        """
        self.interacts = 0
        self.history: deque[HistoryPoint] = deque(maxlen=max_points)
        self._statuses: dict[str, Counter[str]] = {}
        self._successes: Counter[str] = Counter()
        self._min_interval_s = min_interval_s
        self._clock = clock

    def episode_finished(self, task: str, status: str, score: float | None) -> None:
        """Count a session that ended with ``status`` and (when the env said) ``score``."""
        self._statuses.setdefault(task, Counter())[status] += 1
        if status != SampleStatus.TASK_ERROR.value and score is not None and score >= SUCCESS_SCORE:
            self._successes[task] += 1

    def by_task(self) -> dict[str, TaskEpisodes]:
        """Finished episodes per task, in the order tasks first finished one."""
        return {
            task: TaskEpisodes(
                finished=sum(statuses.values()),
                statuses=dict(sorted(statuses.items())),
                successes=self._successes[task],
                infra_errors=statuses[SampleStatus.TASK_ERROR.value],
            )
            for task, statuses in self._statuses.items()
        }

    def sample(self, open_sessions: int) -> HistoryPoint:
        """The controller now; kept in the history unless the last point is under ``min_interval_s`` old."""
        point = HistoryPoint(self._clock(), open_sessions, self.interacts)
        if not self.history or point.time - self.history[-1].time >= self._min_interval_s:
            self.history.append(point)
        return point

    def interact_rate(self, now: HistoryPoint) -> float | None:
        """Interacts per second from the newest history point at least ``min_interval_s`` before ``now``."""
        for point in reversed(self.history):
            elapsed_s = now.time - point.time
            if elapsed_s >= self._min_interval_s:
                return (now.interacts - point.interacts) / elapsed_s
        return None
