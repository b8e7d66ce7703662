from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agentrl_envs.tasks.db import grader
from agentrl_envs.tasks.db.grader import clean_answer, combine_table_hashes, compare_results


@pytest.mark.parametrize(
    ("answer", "truth", "query_type", "expected"),
    [
        # one value: exact strings, floats within 0.01
        (["Vienna"], ["Vienna"], "other", True),
        (["vienna"], ["Vienna"], "other", False),
        (["3.0"], ["3"], "counting", True),
        (["3.009"], ["3"], "aggregation-AVG", True),
        (["3.02"], ["3"], "aggregation-AVG", False),
        # percentages and thousands separators
        (["45%"], ["45"], "other", True),
        (["45 %"], ["45.0"], "other", True),
        (["3,729.7"], ["3729.7"], "aggregation-SUM", True),
        (["1,234,567"], ["1234567"], "aggregation-SUM", True),
        # None / null / nan / empty all mean "0"
        (["none"], ["null"], "other", True),
        (["NULL"], ["0"], "other", True),
        ([""], ["nan"], "other", True),
        ([], [], "other", True),
        (None, ["none"], "other", True),
        # quotes are stripped
        (['"House of Cards"'], ['"House of Cards"'], "other", True),
        (["'House of Cards'"], ["House of Cards"], "other", True),
        # MySQL result strings, as an agent might paste them
        ("[('Vienna',)]", ["Vienna"], "other", True),
        ("[(293.0,)]", ["293"], "aggregation-SUM", True),
        ("[('a',), ('b',)]", ["b", "a"], "other", True),
        # upstream's eval() cannot read Decimal(...) either; its manual fallback splits it into junk
        ("[(Decimal('2.5000'),)]", ["2.5"], "aggregation-AVG", False),
        ("['x', 'y']", ["y", "x"], "other", True),
        ("[x, 'y']", ["x", "y"], "other", True),
        # several values: sets for text, one-to-one float matching for numbers
        (["a", "b", "b"], ["b", "a"], "other", True),
        (["a", "b"], ["a", "c"], "other", False),
        (["1.0", "2.0"], ["2", "1"], "ranking", True),
        (["1.0", "1.0"], ["1", "2"], "ranking", False),
        (["1", "2", "3"], ["1", "2"], "ranking", False),
        (["1", "x"], ["x", "1.0"], "other", False),
        # a plain string that is no list is one value
        ("Vienna", ["Vienna"], "other", True),
        # modifications compare the table hash exactly
        ("3f2a1", "[('3f2a1',)]", "INSERT", True),
        ("3f2a1", "[('3f2a2',)]", "UPDATE", False),
        ("a_b", "[('a_b',)]", "DELETE", True),
    ],
)
def test_compare_results(answer: object, truth: object, query_type: str, expected: bool) -> None:
    assert compare_results(answer, truth, query_type) is expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("[('a',), (1, 2), ('b',)]", ["a", "b"]),  # several-value tuples are dropped, as upstream does
        ("[]", []),
        ("[(None,)]", ["0"]),
        ("[(foo,)]", ["foo"]),  # not a literal: upstream's manual one-tuple fallback
        ("[1, [2, 3]]", ["1", "[2, 3]"]),
        (("a",), ["a"]),
        ([("a",), ("b", "c")], ["a", "('b' 'c')"]),  # upstream then drops the "thousands separator"
        (12, ["12"]),
    ],
)
def test_clean_answer(raw: object, expected: list[str]) -> None:
    assert clean_answer(raw) == expected


def test_literal_strings_are_never_evaluated(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = f"[__import__('pathlib').Path({str(marker)!r}).touch()]"
    assert compare_results(payload, ["x"], "other") is False
    assert not marker.exists()
    tree = ast.parse(Path(grader.__file__).read_text())
    called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not called & {"eval", "exec", "compile"}


def test_combine_table_hashes_takes_first_values_sorted() -> None:
    assert combine_table_hashes(["[('bbb',)]", "[('aaa',)]"]) == "aaa_bbb"
    assert combine_table_hashes(["[(None,)]"]) == "None"
    assert combine_table_hashes(["1146 (42S02): Table 'x' doesn't exist"]) == "1146 (42S02): Table 'x' doesn't exist"
