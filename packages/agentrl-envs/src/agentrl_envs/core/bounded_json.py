"""Parsing JSON written by a model, within bounds that make every failure an answer rather than a crash.

``json.loads`` fails on model output in ways that are not :class:`json.JSONDecodeError`: brackets nested past
the interpreter's recursion limit raise :class:`RecursionError`, and an integer of more than 4300 digits
raises a plain :class:`ValueError` (Python's guard against quadratic ``int`` conversion). Left uncaught, both
used to end an episode as an infrastructure fault, which a policy could learn to emit to escape any penalty.

:func:`loads_bounded` turns each of them, and any structure deeper than :data:`MAX_DEPTH` or any number longer
than :data:`MAX_NUMBER_CHARS`, into :class:`BoundedJSONError`, whose message says what was wrong in words a
model can act on. The bounds are explicit rather than whatever the interpreter's limits happen to be, so the
same text gets the same answer on every machine and at any stack depth, and what passes them is safe for the
recursive code downstream (jsonschema, ``repr``, the tasks).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

__all__ = [
    "MAX_DEPTH",
    "MAX_NUMBER_CHARS",
    "BoundedJSONError",
    "json_depth",
    "loads_bounded",
    "raw_decode_bounded",
    "safe_text",
]

MAX_DEPTH = 64
"""Deepest nesting of arrays/objects accepted; every AgentBench tool's arguments are at most 2 levels deep."""
MAX_NUMBER_CHARS = 1000
"""Longest number literal accepted (well under Python's 4300-digit ``int`` conversion limit)."""


class BoundedJSONError(ValueError):
    """JSON text that is malformed or beyond the bounds.

    ``predicate`` says what is wrong as the end of a sentence about a plural subject (``"are not valid JSON
    (...)"``) so callers can name what was parsed: ``f"Arguments of {name!r} {e.predicate}."``. ``str(e)`` says
    it of "the arguments", the text's usual role.
    """

    def __init__(self, predicate: str) -> None:
        super().__init__(f"The arguments {predicate}.")
        self.predicate = predicate


class _NumberTooLong(Exception):
    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.length = length


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise _NumberTooLong(len(text))
    return int(text)


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise _NumberTooLong(len(text))
    return float(text)


_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float)
_TOO_DEEP = f"nest arrays/objects more than {MAX_DEPTH} levels deep (at most {MAX_DEPTH} are allowed)"


def loads_bounded(text: str) -> Any:
    """Parse JSON ``text`` as :func:`json.loads` does, within :data:`MAX_DEPTH` and :data:`MAX_NUMBER_CHARS`.

    Raises:
        BoundedJSONError: If the text is not JSON, nests deeper than :data:`MAX_DEPTH`, or holds a number
            longer than :data:`MAX_NUMBER_CHARS` characters; the message names the problem and, for syntax
            errors, where it is.
    """
    stripped = text.strip()
    value, end = raw_decode_bounded(stripped)
    if end != len(stripped):
        extra = end + len(stripped[end:]) - len(stripped[end:].lstrip())  # where json.loads would point
        raise BoundedJSONError(f"are not valid JSON (Extra data at position {extra})")
    return value


def raw_decode_bounded(text: str) -> tuple[Any, int]:
    """Like :meth:`json.JSONDecoder.raw_decode` (one value at the start of ``text``), within the same bounds.

    Returns:
        The value and the index in ``text`` where it ends.

    Raises:
        BoundedJSONError: As :func:`loads_bounded`.
    """
    try:
        value, end = _DECODER.raw_decode(text)
    except json.JSONDecodeError as e:
        raise BoundedJSONError(f"are not valid JSON ({e.msg} at position {e.pos})") from None
    except RecursionError:  # nesting past the interpreter's limit, which may be below MAX_DEPTH on a deep stack
        raise BoundedJSONError(_TOO_DEEP) from None
    except _NumberTooLong as e:
        raise BoundedJSONError(
            f"hold a number of {e.length} characters (at most {MAX_NUMBER_CHARS} are allowed)"
        ) from None
    if json_depth(value) > MAX_DEPTH:
        raise BoundedJSONError(_TOO_DEEP)
    return value, end


def json_depth(value: Any, *, stop_at: int = MAX_DEPTH + 1) -> int:
    """How deeply arrays/objects nest in ``value`` (0 for a scalar), counted without recursion up to ``stop_at``."""
    depth = 0
    level: list[Any] = [value]
    while depth < stop_at:
        containers: list[Any] = [item for item in level if isinstance(item, dict | list | tuple)]
        if not containers:
            break
        depth += 1
        level = [child for item in containers for child in _children(item)]
    return depth


def _children(container: Any) -> Iterable[Any]:
    return cast(dict[Any, Any], container).values() if isinstance(container, dict) else cast(Iterable[Any], container)


def safe_text(value: Any) -> str:
    """``str(value)`` for text shown to a model, even for values ``str`` refuses (huge ints, deep nesting)."""
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except (ValueError, RecursionError):
        return f"<a {type(value).__name__} too large or too deeply nested to show>"
