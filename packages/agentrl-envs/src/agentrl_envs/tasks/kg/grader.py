"""Upstream's KG metrics: exact answer-set match (reward) and F1 (score)."""

from __future__ import annotations

from collections.abc import Set

__all__ = ["f1_score"]


def f1_score(predicted: Set[str], gold: Set[str]) -> float:
    """F1 between two answer sets; 0.0 when they share nothing (upstream's ``_calculate_f1``)."""
    hits = len(predicted & gold)
    if hits == 0:
        return 0.0
    precision, recall = hits / len(predicted), hits / len(gold)
    return 2 * precision * recall / (precision + recall)
