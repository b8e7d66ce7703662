from __future__ import annotations

from dataclasses import dataclass

import pytest

from agentrl_envs.tasks.bfcl.report import bfcl_results


@dataclass
class Episode:
    task: str
    success: bool


def test_accuracy_per_category_and_the_unweighted_overall() -> None:
    records = [Episode("bfcl_base", True)] * 3 + [Episode("bfcl_base", False)]  # infra errors are failures too
    records += [Episode("bfcl_miss_func", True)] + [Episode("bfcl_miss_param", False)] * 2
    records += [Episode("bfcl_long_context", True), Episode("db", True)]
    results = bfcl_results(records)
    assert results["multi_turn_base"] == {"accuracy": 0.75, "correct_count": 3, "total_count": 4}
    assert results["multi_turn_miss_param"]["accuracy"] == 0.0
    assert results["multi_turn_overall"] == {
        "accuracy": pytest.approx((0.75 + 1 + 0 + 1) / 4),
        "total_count": 8,
        "complete": True,
    }


def test_a_missing_category_counts_as_zero_and_marks_the_overall_incomplete() -> None:
    results = bfcl_results([Episode("bfcl_base", True)])
    assert results["multi_turn_overall"]["accuracy"] == 0.25 and not results["multi_turn_overall"]["complete"]
    assert bfcl_results([Episode("db", True)]) is None
