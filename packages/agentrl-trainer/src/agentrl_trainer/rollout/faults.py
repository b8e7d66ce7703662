"""Infrastructure faults during rollouts: said once with their cause, counted by kind, and a stop when they dominate.

An environment or engine fault never becomes a reward (the producer retries or drops the group), but a fault
that repeats must not be silent or spin forever. Three rules:

* **Said once.** The first fault of each kind (``<task>/<phase>/<error type>``) is logged with its message and
  traceback; later ones are only counted (``rollout/infra_errors/<kind>``), so a broken environment fills the log
  with one traceback, not thousands.
* **Samples that can never start are skipped.** A sample whose reset fails twice with the same message (on two
  fresh environments) is deterministic, not transient: it is listed once and the producer no longer plays it
  (the DB dev split's sample 5, whose table has a column named ``''``, is the real case).
* **Fail fast.** When more than ``max_infra_error_rate`` of the last ``infra_error_window`` episodes failed, the run
  stops with the first fault's traceback (:class:`InfraErrorRateExceeded`) instead of retrying without end.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections import Counter, deque
from typing import Any

from agentrl_trainer.types import InfraFault, TrainingRow

__all__ = ["FaultLog", "InfraErrorRateExceeded", "fault_from_exception", "fault_from_info"]

logger = logging.getLogger(__name__)

UNSTARTABLE_AFTER = 2
"""Identical reset failures of one sample that mark it as one that can never start."""


class InfraErrorRateExceeded(RuntimeError):
    """Too many recent episodes failed with infrastructure errors; carries the first fault."""

    def __init__(self, message: str, first: InfraFault | None) -> None:
        super().__init__(message)
        self.first = first


def _root_cause(error: BaseException) -> BaseException:
    while error.__cause__ is not None:
        error = error.__cause__
    return error


def fault_from_exception(row: TrainingRow, phase: str, error: BaseException) -> InfraFault:
    """The fault of an exception raised at ``phase`` (its root cause names the kind)."""
    return InfraFault(
        task=row.task,
        index=row.index,
        phase=phase,
        error_type=type(_root_cause(error)).__name__,
        message=str(error),
        traceback="".join(traceback.format_exception(error)),
    )


def fault_from_info(row: TrainingRow, info: dict[str, Any]) -> InfraFault:
    """The fault an environment reported in a step's ``info`` (``error`` is ``"Type: message"``)."""
    error = str(info.get("error") or "infrastructure error (the environment gave no detail)")
    error_type, sep, _ = error.partition(": ")
    if not sep or not error_type.isidentifier():
        error_type = "InfraError"
    return InfraFault(
        task=row.task,
        index=row.index,
        phase="step",
        error_type=error_type,
        message=error,
        traceback=str(info.get("traceback") or ""),
    )


class FaultLog:
    """Counts faults by kind, logs each kind once, finds samples that cannot start, and watches the fault rate."""

    def __init__(self, *, max_rate: float = 1.0, window: int = 32) -> None:
        """Create the log.

        Args:
            max_rate: Stop (see :meth:`check_rate`) when more than this fraction of the last ``window`` episodes
                failed; ``1.0`` never stops.
            window: Episodes the rate is measured over; the rate is judged only once that many have ended.
        """
        self.max_rate = max_rate
        self.window = window
        self.counts: Counter[str] = Counter()
        self.first: InfraFault | None = None
        self.unstartable: dict[TrainingRow, str] = {}
        self._recent: deque[bool] = deque(maxlen=window)
        self._reset_failures: Counter[tuple[TrainingRow, str]] = Counter()
        self._lock = threading.Lock()

    def episode(self, row: TrainingRow, fault: InfraFault | None) -> None:
        """Record one finished episode of ``row``: healthy (``fault`` None) or failed."""
        newly_unstartable = False
        with self._lock:
            self._recent.append(fault is not None)
            if fault is None:
                return
            self.counts[fault.kind] += 1
            is_new = self.counts[fault.kind] == 1
            if self.first is None:
                self.first = fault
            if fault.phase == "reset":
                self._reset_failures[(row, fault.message)] += 1
                newly_unstartable = (
                    row not in self.unstartable and self._reset_failures[(row, fault.message)] >= UNSTARTABLE_AFTER
                )
                if newly_unstartable:
                    self.unstartable[row] = fault.message
        if is_new:
            logger.error(
                "infrastructure error %s (task=%s index=%d): %s\n%s(further errors of this kind are counted in "
                "rollout/infra_errors/%s, not logged)",
                fault.kind,
                fault.task,
                fault.index,
                fault.message,
                fault.traceback,
                fault.kind,
            )
        if newly_unstartable:
            logger.warning(
                "task=%s split=%s index=%d can never start (%s, twice on fresh environments); skipped for the rest "
                "of the run",
                row.task,
                row.split,
                row.index,
                fault.message,
            )

    def is_unstartable(self, row: TrainingRow) -> bool:
        """Whether ``row`` failed to start for good (see the module docstring)."""
        return row in self.unstartable

    def check_rate(self) -> None:
        """Raise if the recent fault rate is above the limit.

        Raises:
            InfraErrorRateExceeded: With the first fault's message and traceback.
        """
        with self._lock:
            if len(self._recent) < self.window:
                return
            failed = sum(self._recent)
        rate = failed / self.window
        if rate <= self.max_rate:
            return
        first = self.first
        detail = (
            f"The first was {first.kind} (task={first.task} index={first.index}): {first.message}\n{first.traceback}"
            if first
            else ""
        )
        counts = ", ".join(f"{kind}: {n}" for kind, n in self.counts.most_common())
        raise InfraErrorRateExceeded(
            f"{failed} of the last {self.window} episodes failed with infrastructure errors (rate {rate:.2f} > "
            f"max_infra_error_rate {self.max_rate}); stopping instead of retrying without end. Counts by kind: "
            f"{counts}. {detail}Fix the environment, or raise max_infra_error_rate / infra_error_window.",
            first,
        )
