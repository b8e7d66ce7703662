"""Carriers of the synthesis pipeline: a candidate task, the verdict on it, and the counts of a run."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["DIFFICULTIES", "Candidate", "Rejection", "SynthCounts", "TaskName"]

TaskName = Literal["db", "os", "kg"]
DIFFICULTIES = (1, 2, 3)
"""1 easy, 2 medium, 3 hard; a run over several levels writes them in this order (a curriculum)."""


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a candidate was dropped: a short reason key (counted in the report) and a detail for the log."""

    reason: str
    detail: str = ""


@dataclass(slots=True)
class Candidate:
    """A proposed training task: the sample in its task's upstream format, and where it came from."""

    task: TaskName
    generator: str
    """``procedural`` or ``llm``."""
    difficulty: int
    sample: dict[str, Any]
    """The sample as the upstream file stores it (extra keys ``difficulty`` and ``source`` are kept)."""
    rejection: Rejection | None = None
    """Set when the generator already knows the candidate is unusable (e.g. an unparsable LLM reply)."""


@dataclass(slots=True)
class SynthCounts:
    """Counts of one (task, generator) run; ``rejected`` maps a reason to how many candidates it dropped."""

    task: str
    generator: str
    generated: int = 0
    validated: int = 0
    """Candidates played through the env (those not dropped as duplicates first)."""
    kept: int = 0
    rejected: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    """The first rejection's detail per reason, to see what a reason means in this run."""
    by_difficulty: Counter[int] = field(default_factory=Counter)
    """Kept tasks per difficulty level."""
    oracle_success: float | None = None
    """Share of the kept tasks the oracle solves when the written file is played again (1.0 expected)."""
    max_overlap: float = 0.0
    """The largest n-gram similarity of a kept task to any test/dev sample (below the threshold)."""

    def reject(self, rejection: Rejection) -> None:
        """Count one rejection (and keep its detail if it is the first of its reason)."""
        self.rejected[rejection.reason] += 1
        self.examples.setdefault(rejection.reason, rejection.detail[:300])

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict for the report."""
        return {
            "task": self.task,
            "generator": self.generator,
            "generated": self.generated,
            "validated": self.validated,
            "kept": self.kept,
            "rejected": dict(sorted(self.rejected.items())),
            "rejection_examples": dict(sorted(self.examples.items())),
            "kept_by_difficulty": {str(k): v for k, v in sorted(self.by_difficulty.items())},
            "oracle_success": self.oracle_success,
            "max_overlap": round(self.max_overlap, 4),
        }
