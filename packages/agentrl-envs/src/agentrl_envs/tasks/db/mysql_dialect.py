r"""MySQL shims for the embedded SQLite backend.

Agents write MySQL (upstream's server is MySQL 8), so statements are rewritten token by token before SQLite
sees them, and MySQL functions SQLite lacks are registered on the connection:

- string literals follow MySQL: backslash escapes (``'It\'s'``), double-quoted strings (``"abc"`` is a string,
  not an identifier), ``N'..'``/``_utf8mb4'..'`` prefixes; strings holding NUL become ``CAST(X'..' AS TEXT)``;
- ``#`` and ``-- `` comments are dropped; backtick identifiers pass through (SQLite reads them too);
- ``/`` divides exactly (``5/2`` is 2.5, not 2);
- ``SHOW TABLES`` and ``DESCRIBE t`` (:func:`show_command`) are answered by the backend;
- ``LEFT(``/``RIGHT(`` calls are renamed (they are join keywords in SQLite); identifiers that start with a
  digit (``1952_results``) are quoted;
- text columns use the :data:`COLLATION` ``mysql_ci`` (case- and accent-insensitive);
- functions ``md5``, ``concat``, ``concat_ws`` (skipping NULLs), ``if``, ``lcase``, ``ucase``, ``char_length``,
  ``locate``, ``left``, ``right`` and the ``REGEXP`` operator (case-insensitive, as MySQL's default collation).

``SLEEP`` is registered by the backend, which owns the time limit. Errors are worded MySQL-style
(``1146 (42S02): no such table: t``) by :func:`mysql_error_text`.
"""

from __future__ import annotations

import functools
import hashlib
import re
import sqlite3
import unicodedata
from collections.abc import Callable
from typing import Any

__all__ = ["COLLATION", "mysql_error_text", "register_functions", "show_command", "translate"]

_ESCAPES = {"0": "\0", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%", "_": "\\_"}
_RENAMED_CALLS = {"left": "mysql_left", "right": "mysql_right"}
_WORD_START = re.compile(r"[A-Za-z_$]")
_WORD = re.compile(r"[A-Za-z0-9_$]+")
_NUMBER = re.compile(r"\d+|\d+[eE]\d*|0[xX][0-9a-fA-F]+|0[bB][01]+")
COLLATION = "mysql_ci"
"""The collation of every text column: case- and accent-insensitive, as MySQL 8's ``utf8mb4_0900_ai_ci``."""


def translate(sql: str) -> str:
    """Rewrite a MySQL statement into SQLite syntax with the same meaning (see the module docstring)."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        char = sql[i]
        if char in "'\"":
            value, i = _read_string(sql, i)
            out.append(_sqlite_literal(value) if value is not None else sql[i:])
            if value is None:
                break
        elif char == "`":
            end = _closing_backtick(sql, i)
            out.append(sql[i:end])
            i = end
        elif char == "#" or (sql.startswith("--", i) and (i + 2 == n or sql[i + 2] in " \t\r\n")):
            end = sql.find("\n", i)
            i = n if end < 0 else end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(sql[i:end])
            i = end
        elif char == "/":
            # MySQL's / always divides exactly (5/2 = 2.5); SQLite's truncates integers. ``a*1.0/b`` keeps the
            # meaning of every operand, as * and / share one precedence level and associate left.
            out.append("*1.0/")
            i += 1
        elif _WORD_START.match(char):
            word = _word_at(sql, i)
            i += len(word)
            out.append(_word(word, sql, i))
        elif char.isdigit():
            word = _word_at(sql, i)
            # MySQL identifiers may start with a digit (1952_results); SQLite needs them quoted
            out.append(word if _NUMBER.fullmatch(word) else f"`{word}`")
            i += len(word)
        else:
            out.append(char)
            i += 1
    return "".join(out)


_SHOW_TABLES = re.compile(r"\s*SHOW\s+(?:FULL\s+)?TABLES\s*;?\s*", re.IGNORECASE)
_DESCRIBE = re.compile(
    r"\s*(?:DESCRIBE|DESC|EXPLAIN|SHOW\s+(?:FULL\s+)?(?:COLUMNS|FIELDS)\s+(?:FROM|IN))\s+"
    r"(`(?:[^`]|``)+`|[A-Za-z0-9_$]+)\s*;?\s*",
    re.IGNORECASE,
)


def show_command(sql: str) -> tuple[str, str | None] | None:
    """Recognise the MySQL commands agents use to look around: ``SHOW TABLES`` and ``DESCRIBE t``.

    Returns:
        ``("tables", None)``, ``("columns", table_name)`` or ``None`` for any other statement.
    """
    if _SHOW_TABLES.fullmatch(sql):
        return "tables", None
    match = _DESCRIBE.fullmatch(sql)
    if match:
        name = match.group(1)
        if name.startswith("`"):
            name = name[1:-1].replace("``", "`")
        return "columns", name
    return None


def _word_at(sql: str, start: int) -> str:
    match = _WORD.match(sql, start)
    assert match is not None  # the caller saw a word's first character at ``start``
    return match.group()


def _word(word: str, sql: str, end: int) -> str:
    lower = word.lower()
    following = sql[end : end + 1]
    if following == "'" and (lower == "n" or lower.startswith("_")):
        return ""  # N'..' and charset introducers: the string alone means the same here
    if following == "(" and lower in _RENAMED_CALLS:
        return _RENAMED_CALLS[lower]
    return word


def _read_string(sql: str, start: int) -> tuple[str | None, int]:
    """A MySQL string literal starting at ``start``: its value and the index after it (``None`` if unclosed)."""
    quote = sql[start]
    chars: list[str] = []
    i, n = start + 1, len(sql)
    while i < n:
        char = sql[i]
        if char == "\\" and i + 1 < n:
            chars.append(_ESCAPES.get(sql[i + 1], sql[i + 1]))
            i += 2
        elif char == quote:
            if sql.startswith(quote, i + 1):
                chars.append(quote)
                i += 2
            else:
                return "".join(chars), i + 1
        else:
            chars.append(char)
            i += 1
    return None, start


def _sqlite_literal(value: str) -> str:
    if "\0" in value:  # SQLite statement text cannot hold NUL; a blob cast back to text can
        return f"CAST(X'{value.encode('utf-8').hex()}' AS TEXT)"
    return "'" + value.replace("'", "''") + "'"


def _closing_backtick(sql: str, start: int) -> int:
    i = start + 1
    while True:
        end = sql.find("`", i)
        if end < 0:
            return len(sql)
        if sql.startswith("``", end):
            i = end + 2
            continue
        return end + 1


# ----------------------------------------------------------------------------- functions


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return str(value)


def _md5(value: Any) -> str | None:
    return None if value is None else hashlib.md5(_text(value).encode("utf-8")).hexdigest()


def _concat(*values: Any) -> str | None:
    return None if any(v is None for v in values) else "".join(map(_text, values))


def _concat_ws(separator: Any, *values: Any) -> str | None:
    if separator is None:
        return None
    return _text(separator).join(_text(v) for v in values if v is not None)


def _if(condition: Any, then: Any, otherwise: Any) -> Any:
    return then if condition not in (None, 0, 0.0, "", "0") else otherwise


def _locate(needle: Any, haystack: Any, start: Any = 1) -> int | None:
    if needle is None or haystack is None:
        return None
    begin = max(int(start) - 1, 0)
    return _text(haystack).lower().find(_text(needle).lower(), begin) + 1


def _left(value: Any, length: Any) -> str | None:
    return None if value is None or length is None else _text(value)[: max(int(length), 0)]


def _right(value: Any, length: Any) -> str | None:
    if value is None or length is None:
        return None
    count = max(int(length), 0)
    return _text(value)[-count:] if count else ""


def _regexp(pattern: Any, value: Any) -> int | None:
    if pattern is None or value is None:
        return None
    return int(re.search(_text(pattern), _text(value), re.IGNORECASE) is not None)


def _unary(function: Callable[[str], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else function(_text(value))


_FUNCTIONS: list[tuple[str, int, Callable[..., Any]]] = [
    ("md5", 1, _md5),
    ("concat", -1, _concat),
    ("concat_ws", -1, _concat_ws),
    ("if", 3, _if),
    ("lcase", 1, _unary(str.lower)),
    ("ucase", 1, _unary(str.upper)),
    ("char_length", 1, _unary(len)),
    ("locate", 2, _locate),
    ("locate", 3, _locate),
    ("mysql_left", 2, _left),
    ("mysql_right", 2, _right),
    ("regexp", 2, _regexp),
]


def register_functions(conn: sqlite3.Connection) -> None:
    """Add the MySQL functions SQLite lacks, and the :data:`COLLATION`, to a connection."""
    for name, arity, function in _FUNCTIONS:
        conn.create_function(name, arity, function, deterministic=True)
    conn.create_collation(COLLATION, _collate)


@functools.lru_cache(maxsize=65536)
def _collation_key(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _collate(left: str, right: str) -> int:
    a, b = _collation_key(left), _collation_key(right)
    return (a > b) - (a < b)


# ----------------------------------------------------------------------------- errors

_ERROR_CODES = [
    ("no such table", 1146, "42S02"),
    ("no such column", 1054, "42S22"),
    ("no such function", 1305, "42000"),
    ("already exists", 1050, "42S01"),
    ("syntax error", 1064, "42000"),
    ("incomplete input", 1064, "42000"),
    ("unrecognized token", 1064, "42000"),
    ("one statement at a time", 1064, "42000"),
    ("null character", 1064, "42000"),
    ("not authorized", 1227, "42000"),
    ("authorization denied", 1227, "42000"),
]


def mysql_error_text(error: BaseException) -> str:
    """An SQLite error worded like mysql.connector's ``str(error)``: ``<errno> (<sqlstate>): <message>``."""
    message = str(error)
    lowered = message.lower()
    for needle, code, state in _ERROR_CODES:
        if needle in lowered:
            if code == 1227:
                message = "Access denied: ATTACH, VACUUM INTO, PRAGMA and file access are disabled in this database"
            return f"{code} ({state}): {message}"
    return f"1105 (HY000): {message}"
