"""Summary statistics shared by the benchmarks (bench/ is on sys.path when a benchmark runs as a script)."""

from __future__ import annotations


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100, nearest rank) of ``values`` in their unit, rounded to three decimals."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return round(ordered[rank], 3)
