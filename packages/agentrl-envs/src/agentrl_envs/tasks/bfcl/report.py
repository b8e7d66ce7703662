"""BFCL results in BFCL's own terms: accuracy per multi-turn category and the multi-turn overall.

BFCL scores a category as ``correct_count / total_count`` over every entry it was asked to play (an entry
that failed for any reason, an inference error included, counts as wrong), and its leaderboard's
"Multi Turn Overall Acc" is the unweighted mean of the four category accuracies (``calculate_unweighted_
accuracy``; a category not evaluated counts as 0 there and the overall is shown as N/A). Our own figures
(``success_rate``) leave infrastructure errors out; these count them, as BFCL does. With several runs the
accuracy is over all episodes (the mean of the runs' accuracies).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from agentrl_envs.tasks.bfcl.data import CATEGORIES

__all__ = ["bfcl_results"]


class _Episode(Protocol):
    @property
    def task(self) -> str: ...

    @property
    def success(self) -> bool: ...


def bfcl_results(records: Iterable[_Episode]) -> dict[str, Any] | None:
    """The ``bfcl`` block of ``results.json``, or ``None`` if no BFCL category was played.

    Returns:
        ``{"multi_turn_overall": {"accuracy", "total_count", "complete"}, "multi_turn_base": {"accuracy",
        "correct_count", "total_count"}, ...}`` with BFCL's category names as keys.
    """
    counts = {short: [0, 0] for short in CATEGORIES}
    for record in records:
        if record.task in counts:
            counts[record.task][0] += int(record.success)
            counts[record.task][1] += 1
    played = {short: c for short, c in counts.items() if c[1]}
    if not played:
        return None
    categories = {
        CATEGORIES[short].name: {"accuracy": correct / total, "correct_count": correct, "total_count": total}
        for short, (correct, total) in played.items()
    }
    accuracies = [categories.get(c.name, {}).get("accuracy", 0.0) for c in CATEGORIES.values()]
    overall = {
        "accuracy": sum(accuracies) / len(accuracies),
        "total_count": sum(total for _, total in played.values()),
        "complete": len(played) == len(CATEGORIES),
    }
    return {"multi_turn_overall": overall, **categories}
