"""Grading of DBBench answers, as upstream's ``DBResultProcessor`` does it, without ``eval()``.

Both the committed answer and the gold answer are cleaned into a list of strings (MySQL result strings such
as ``"[('a',), (3,)]"`` are parsed, one-value tuples unwrapped, quotes stripped, percent signs and thousands
separators dropped, ``None``/``null``/``nan``... mapped to ``"0"``) and then compared: hashes exactly for
INSERT/DELETE/UPDATE samples, one value within 0.01 when both are numbers, several values as a one-to-one
float match or as sets. Upstream parses Python-literal strings with ``eval()``; here :func:`ast.literal_eval`
does it, which accepts the same literals and refuses everything else (upstream's ``eval`` fails on the
names a result string can hold, such as ``Decimal('1.5')``, so both fall back to the same manual parsing).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

__all__ = ["MODIFICATION_TYPES", "clean_answer", "combine_table_hashes", "compare_results", "is_modification"]

MODIFICATION_TYPES = ("INSERT", "DELETE", "UPDATE")
FLOAT_TOLERANCE = 1e-2
_QUOTES = "'\""
_SPECIAL_VALUES: dict[str, str] = dict.fromkeys(
    ("none", "null", "undefined", "nan", "inf", "infinity", "-inf", "-infinity", ""), "0"
)


def is_modification(query_type: str) -> bool:
    """Whether a sample type is graded by table hash (INSERT/DELETE/UPDATE) rather than by its label."""
    return query_type in MODIFICATION_TYPES


def compare_results(answer: Any, ground_truth: Any, query_type: str) -> bool:
    """Whether ``answer`` matches ``ground_truth`` under upstream's rules.

    Args:
        answer: The committed answer (normally a list of strings) or, for modifications, the table hash.
        ground_truth: The sample's ``label`` or ``answer_md5``.
        query_type: The sample's first type (``INSERT``, ``counting``, ...).
    """
    processed_answer = clean_answer(answer)
    processed_truth = clean_answer(ground_truth)
    if processed_answer is None or processed_truth is None:
        return False  # upstream: len(None) raises inside its try and the answer counts as wrong
    if is_modification(query_type):
        return processed_answer == processed_truth
    if len(processed_answer) == 1 and len(processed_truth) == 1:
        return _compare_one(processed_answer[0], processed_truth[0])
    if all(map(_is_float, processed_answer)) and all(map(_is_float, processed_truth)):
        return _floats_match(processed_answer, processed_truth)
    return set(processed_answer) == set(processed_truth)


def clean_answer(answer: Any) -> list[str] | None:
    """Upstream's ``_clean_answer``: the answer as a list of normalised strings (``None`` if unusable)."""
    if answer is None:
        return ["0"]
    mysql_values = _clean_mysql_result(answer)
    if mysql_values is not None:
        return [normalize_value(v) for v in mysql_values]
    if isinstance(answer, str):
        text = answer.strip()
        if not (text.startswith("[") and text.endswith("]")):
            return [normalize_value(_strip_quotes(text))]
        parsed = _literal(text)
        if parsed is _UNPARSED:
            return [normalize_value(v) for v in _split_list_text(text[1:-1])]
        if isinstance(parsed, list):
            return [normalize_value(_item_text(item)) for item in parsed]
        return None
    if isinstance(answer, list | tuple):
        return [normalize_value(_item_text(item)) for item in answer]
    return [normalize_value(_strip_quotes(str(answer)))]


def normalize_value(value: Any) -> str:
    """Upstream's ``_normalize_special_values`` for one value."""
    if value is None:
        return "0"
    text = str(value).strip()
    if text.endswith("%"):
        return text[:-1].strip()
    if "," in text and not text.startswith("[") and not text.endswith("]"):
        text = text.replace(",", "")
    return _SPECIAL_VALUES.get(text.lower(), text)


def combine_table_hashes(raw_results: Sequence[str]) -> str:
    """Upstream's combination of per-table hash query results into the answer of a modification sample.

    Each result is the raw string the hash query returned (``"[('3f2a...',)]"``, ``"[(None,)]"`` or an error
    text); its first value is taken as upstream does, and the values are sorted and joined with ``_``.
    """
    values = [raw.strip("[]()").split(",")[0].strip().strip("'") for raw in raw_results]
    return "_".join(sorted(values))


# ----------------------------------------------------------------------------- internals

_UNPARSED = object()


def _literal(text: str) -> Any:
    """``ast.literal_eval`` that reports failure with a sentinel (any literal, including ``None``, is valid)."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return _UNPARSED


def _clean_mysql_result(result: Any) -> list[str] | None:
    """Values of a MySQL result string ``[(v,), ...]``; ``None`` if ``result`` is not one."""
    if not (isinstance(result, str) and result.startswith("[") and result.endswith("]")):
        return None
    parsed = _literal(result)
    if isinstance(parsed, list) and all(isinstance(item, tuple) for item in parsed):
        # several-value tuples are dropped, as upstream does
        return [_strip_quotes(str(item[0])) for item in parsed if len(item) == 1]
    inner = result.strip("[]")
    if inner.count("(") == 1 and inner.startswith("(") and inner.endswith(",)"):
        return [_strip_quotes(inner[1:-2])]
    return None


def _split_list_text(text: str) -> list[str]:
    """Upstream's manual split of an unparsable ``[...]`` string on commas outside quotes."""
    items: list[str] = []
    current = ""
    in_quotes = False
    for char in text:
        if char in _QUOTES:
            in_quotes = not in_quotes
        elif char == "," and not in_quotes:
            if current:
                items.append(_strip_quotes(current))
                current = ""
        else:
            current += char
    if current:
        items.append(_strip_quotes(current))
    return items


def _item_text(item: Any) -> str:
    if isinstance(item, tuple) and len(item) == 1:
        item = item[0]
    return _strip_quotes(str(item))


def _strip_quotes(text: str) -> str:
    return text.strip().strip(_QUOTES)


def _compare_one(answer: str, truth: str) -> bool:
    if answer == "0" and truth == "0":
        return True
    if _is_float(answer) and _is_float(truth):
        return _float_equal(answer, truth)
    return answer == truth


def _floats_match(answers: list[str], truths: list[str]) -> bool:
    """Greedy one-to-one matching of two equally long lists of numbers within the tolerance."""
    if len(answers) != len(truths):
        return False
    matched = [False] * len(truths)
    for answer in answers:
        for i, truth in enumerate(truths):
            if not matched[i] and _float_equal(answer, truth):
                matched[i] = True
                break
        else:
            return False
    return all(matched)


def _is_float(value: str) -> bool:
    try:
        float(value)
    except (ValueError, TypeError):
        return False
    return True


def _float_equal(a: str, b: str) -> bool:
    # float('nan') never matches and float('inf') - float('inf') is nan: both compare False as upstream
    difference = abs(float(a) - float(b))
    return not math.isnan(difference) and difference <= FLOAT_TOLERANCE
