"""Bounded JSON parsing: every way model-written JSON can break ``json.loads`` becomes one error that says why."""

from __future__ import annotations

import json
import re
import sys
import traceback

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentrl_envs.core.bounded_json import (
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    BoundedJSONError,
    json_depth,
    loads_bounded,
    raw_decode_bounded,
    safe_text,
)

DEEP = "[" * 100_000 + "]" * 100_000
"""100 KB of nested brackets: past the interpreter's recursion limit, json.loads raises RecursionError."""
LONG_INT = "1" * 100_000
"""A 100,000-digit number: past Python's 4300-digit int conversion limit, json.loads raises ValueError."""


@pytest.mark.parametrize(
    ("text", "predicate"),
    [
        (DEEP, f"nest arrays/objects more than {MAX_DEPTH} levels deep (at most {MAX_DEPTH} are allowed)"),
        ('{"a": ' + DEEP + "}", "nest arrays/objects more than"),
        ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "nest arrays/objects more than"),
        (LONG_INT, f"hold a number of 100000 characters (at most {MAX_NUMBER_CHARS} are allowed)"),
        ('{"query": ' + LONG_INT + "}", "hold a number of 100000 characters"),
        ('{"x": 0.' + LONG_INT + "}", "hold a number of 100002 characters"),
        ('{"x": 1', "are not valid JSON (Expecting ',' delimiter at position 7)"),
        ('{"x": 1} trailing', "are not valid JSON (Extra data at position 9)"),
        ("", "are not valid JSON (Expecting value at position 0)"),
    ],
)
def test_every_failure_is_a_bounded_json_error(text: str, predicate: str) -> None:
    with pytest.raises(BoundedJSONError, match=re.escape(predicate)) as caught:
        loads_bounded(text)
    assert str(caught.value) == f"The arguments {caught.value.predicate}."


def test_failures_of_plain_json_loads_that_the_bounds_catch() -> None:
    """What the bounds are for: the two inputs of issue 16 break json.loads outside JSONDecodeError."""
    with pytest.raises(RecursionError):
        json.loads(DEEP)
    with pytest.raises(ValueError, match="Exceeds the limit"):
        json.loads(LONG_INT)
    with pytest.raises(BoundedJSONError):
        loads_bounded(DEEP)
    with pytest.raises(BoundedJSONError):
        loads_bounded(LONG_INT)


def test_within_bounds_it_is_json_loads() -> None:
    deepest = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    longest = "9" * MAX_NUMBER_CHARS
    assert json_depth(loads_bounded(deepest)) == MAX_DEPTH
    assert loads_bounded(f" {longest} ") == int(longest)
    assert loads_bounded('{"a": [1, 2.5, "\\u0000", null, true]}') == {"a": [1, 2.5, "\x00", None, True]}


def test_the_depth_bound_holds_on_a_deep_stack() -> None:
    """Near the recursion limit json.loads fails sooner; the answer is the same error, not a crash."""

    def nested(levels: int) -> BaseException | None:
        if levels:
            return nested(levels - 1)
        try:
            loads_bounded("[" * 50 + "]" * 50)
        except BaseException as e:  # noqa: BLE001 - the test reports whatever came out
            return e
        return None

    error = nested(sys.getrecursionlimit() - len(traceback.extract_stack()) - 20)
    assert error is None or isinstance(error, BoundedJSONError)


def test_raw_decode_reports_the_end() -> None:
    assert raw_decode_bounded('{"a": 1} and more') == ({"a": 1}, 8)
    with pytest.raises(BoundedJSONError):
        raw_decode_bounded(DEEP + " tail")


def test_json_depth_does_not_recurse() -> None:
    value: list = []
    for _ in range(100_000):
        value = [value]
    assert json_depth(value) == MAX_DEPTH + 1  # counting stops past the bound
    assert json_depth(value, stop_at=10**6) == 100_001
    assert [json_depth(v) for v in (1, "x", [], {}, [1, {"a": []}])] == [0, 0, 1, 1, 3]


def test_safe_text_never_raises() -> None:
    value: list = []
    for _ in range(100_000):
        value = [value]
    assert safe_text("x") == "x"
    assert safe_text(10**5000).startswith("<a int too large")
    assert safe_text(value).startswith("<a list too large")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
)


@settings(max_examples=200, deadline=None)
@given(value=JSON_VALUES)
def test_round_trips_what_json_dumps_writes(value: object) -> None:
    text = json.dumps(value)
    assert loads_bounded(text) == json.loads(text)
