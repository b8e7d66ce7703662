from __future__ import annotations

import sqlite3

import pytest

from agentrl_envs.tasks.db.mysql_dialect import mysql_error_text, register_functions, show_command, translate


@pytest.mark.parametrize(
    ("mysql", "sqlite"),
    [
        ("SELECT 'It\\'s'", "SELECT 'It''s'"),
        ("SELECT 'a\\\\b', 'c''d'", "SELECT 'a\\b', 'c''d'"),
        ("SELECT 'line\\nbreak'", "SELECT 'line\nbreak'"),
        ("SELECT 'x\\%y'", "SELECT 'x\\%y'"),  # MySQL keeps the backslash of \% and \_
        ('SELECT "double" FROM t', "SELECT 'double' FROM t"),
        ('SELECT "say \\"hi\\""', "SELECT 'say \"hi\"'"),
        ("SELECT `a``b` FROM `t`", "SELECT `a``b` FROM `t`"),
        ("SELECT 1 # comment\n, 2", "SELECT 1 \n, 2"),
        ("SELECT 1 -- comment", "SELECT 1 "),
        ("SELECT 5--2", "SELECT 5--2"),
        ("SELECT 1 /* a / b */", "SELECT 1 /* a / b */"),
        ("SELECT a / b FROM t", "SELECT a *1.0/ b FROM t"),
        ("INSERT INTO 1952_results VALUES (1e5, 0x1F)", "INSERT INTO `1952_results` VALUES (1e5, 0x1F)"),
        (
            "SELECT LEFT(name, 2), RIGHT(name, 1) FROM t LEFT JOIN u",
            "SELECT mysql_left(name, 2), mysql_right(name, 1) FROM t LEFT JOIN u",
        ),
        ("SELECT N'abc', _utf8mb4'x', X'41'", "SELECT 'abc', 'x', X'41'"),
        ("SELECT 'a\\0b'", "SELECT CAST(X'610062' AS TEXT)"),
        ("SELECT 'unclosed", "SELECT 'unclosed"),
    ],
)
def test_translate(mysql: str, sqlite: str) -> None:
    assert translate(mysql) == sqlite


@pytest.fixture
def conn() -> sqlite3.Connection:
    connection = sqlite3.connect(":memory:")
    register_functions(connection)
    connection.execute("CREATE TABLE t (name TEXT COLLATE mysql_ci)")
    connection.executemany("INSERT INTO t VALUES (?)", [("Montréal",), ("montreal",), ("Zürich",), (None,)])
    return connection


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("SELECT md5('a')", "0cc175b9c0f1b6a831c399e269772661"),
        ("SELECT md5(NULL)", None),
        ("SELECT concat_ws(',', 'a', NULL, 'b')", "a,b"),
        ("SELECT concat('a', NULL)", None),
        ("SELECT concat('a', 1, 'b')", "a1b"),
        ("SELECT if(1 > 0, 'y', 'n')", "y"),
        ("SELECT lcase('AbC') || ucase('x')", "abcX"),
        ("SELECT char_length('héllo')", 5),
        ("SELECT locate('b', 'abcb'), locate('b', 'abcb', 3)", 2),
        ("SELECT 'ABC' REGEXP '^a'", 1),
        ("SELECT count(*) FROM t WHERE name = 'MONTREAL'", 2),  # case- and accent-insensitive, as MySQL 8
        ("SELECT count(DISTINCT name) FROM t", 2),
        ("SELECT 5 *1.0/ 2", 2.5),
    ],
)
def test_mysql_functions(conn: sqlite3.Connection, query: str, expected: object) -> None:
    assert conn.execute(query).fetchone()[0] == expected


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SHOW TABLES", ("tables", None)),
        ("show full tables;", ("tables", None)),
        ("DESCRIBE `my table`", ("columns", "my table")),
        ("desc t", ("columns", "t")),
        ("SHOW COLUMNS FROM `a``b`", ("columns", "a`b")),
        ("SELECT 1", None),
        ("SHOW TABLES; DROP TABLE t", None),
    ],
)
def test_show_command(sql: str, expected: object) -> None:
    assert show_command(sql) == expected


@pytest.mark.parametrize(
    ("message", "prefix"),
    [
        ("no such table: x", "1146 (42S02): no such table: x"),
        ("no such column: y", "1054 (42S22): no such column: y"),
        ('near "SELEC": syntax error', '1064 (42000): near "SELEC": syntax error'),
        ("not authorized", "1227 (42000): Access denied"),
        ("something else", "1105 (HY000): something else"),
    ],
)
def test_errors_are_worded_like_mysql(message: str, prefix: str) -> None:
    assert mysql_error_text(sqlite3.OperationalError(message)).startswith(prefix)
