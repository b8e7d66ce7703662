"""The embedded DBBench backend: one SQLite file per episode, in a temporary directory removed at its end.

Tables are created as upstream creates them in MySQL (every column ``TEXT``, here with a case- and
accent-insensitive collation like MySQL 8's default). The agent's statements go through
:mod:`.mysql_dialect`; an authorizer refuses ``ATTACH`` (which ``VACUUM INTO`` uses too), ``PRAGMA`` and
extension loading, so nothing outside the episode's file can be read or written; a progress handler enforces
the per-query time limit, so a runaway query or an endless recursive CTE cannot hang the episode.
The table hash is computed in Python (SQLite 3.40 has no ``ORDER BY`` inside aggregates) exactly as upstream's
MySQL query computes it.
"""

from __future__ import annotations

import hashlib
import math
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from agentrl_envs.core.env import Fidelity
from agentrl_envs.core.errors import InfraError
from agentrl_envs.tasks.db.base import GROUP_CONCAT_MAX_LEN, QueryTimeoutError, format_rows, private_dir
from agentrl_envs.tasks.db.data import DBSample, Table
from agentrl_envs.tasks.db.mysql_dialect import (
    COLLATION,
    mysql_error_text,
    register_functions,
    show_command,
    translate,
)

__all__ = ["SQLiteBackend", "SQLiteEpisodeDB"]

_DENIED_ACTIONS = {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_PRAGMA}
_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}
_PROGRESS_EVERY = 1000
"""SQLite VM instructions between two checks of the deadline (about 10 µs of work)."""
_MAX_PAGES = 25_600
"""A 100 MiB cap (4 KiB pages) on the episode's file, so a runaway ``INSERT ... SELECT`` cannot fill the disk."""
_MAX_LENGTH = 16 * 1024 * 1024
"""The longest string or blob a statement may build (``repeat``-style blow-ups fail instead of eating RAM)."""


def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None) -> int:
    if action in _DENIED_ACTIONS:
        return sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in _DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK


class SQLiteEpisodeDB:
    """One episode's SQLite database file."""

    def __init__(self, sample: DBSample, *, query_timeout_s: float, result_limit: int) -> None:
        """Create the file and load the sample's tables.

        Args:
            sample: The sample whose tables to create.
            query_timeout_s: Per-statement time limit.
            result_limit: Characters of a result the agent sees.
        """
        self._timeout_s = query_timeout_s
        self._limit = result_limit
        self._deadline = math.inf
        self._timed_out = False
        self._dir: Path | None = private_dir("db")
        self._conn = sqlite3.connect(self._dir / "episode.db", isolation_level=None, check_same_thread=False)
        try:
            self._configure()
            self._load(sample.tables)
        except BaseException:
            self.close()
            raise

    def _configure(self) -> None:
        conn = self._conn
        conn.execute("PRAGMA journal_mode=MEMORY")  # a scratch database: no durability needed, speed is
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute(f"PRAGMA max_page_count={_MAX_PAGES}")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_LENGTH)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        register_functions(conn)
        conn.create_function("sleep", 1, self._sleep)
        conn.set_authorizer(_authorize)
        conn.set_progress_handler(self._progress, _PROGRESS_EVERY)

    def _load(self, tables: tuple[Table, ...]) -> None:
        for table in tables:
            if "" in table.columns:  # MySQL refuses it, so upstream can never start such a sample
                raise InfraError(f"1166 (42000): Incorrect column name '' in table {table.name!r}")
        self._conn.execute("BEGIN")
        for table in tables:
            name = _quote(table.name)
            columns = ",".join(f"{_quote(c)} TEXT COLLATE {COLLATION}" for c in table.columns)
            self._conn.execute(f"CREATE TABLE IF NOT EXISTS {name} ({columns})")
            if table.rows:
                marks = ",".join("?" * len(table.columns))
                self._conn.executemany(f"INSERT INTO {name} VALUES ({marks})", table.rows)
        self._conn.execute("COMMIT")

    # ----------------------------------------------------------------- EpisodeDB

    def execute(self, sql: str) -> str:
        """Run one agent statement (see :meth:`EpisodeDB.execute`)."""
        self._start_clock()
        try:
            command = show_command(sql)
            if command is not None:
                return format_rows(self._show(*command), self._limit)[0]
            cursor = self._conn.execute(translate(sql))
            if cursor.description is None:
                return "[]"
            return format_rows(cursor, self._limit)[0]
        except (sqlite3.Error, ValueError) as e:
            if self._timed_out:
                raise QueryTimeoutError(f"query ran past {self._timeout_s} s") from e
            self._rollback()
            return mysql_error_text(e)
        finally:
            self._deadline = math.inf

    def _show(self, kind: str, table: str | None) -> list[tuple[Any, ...]]:
        """``SHOW TABLES`` / ``DESCRIBE t`` rows as MySQL shapes them (every column reads as ``text``)."""
        if table is None:
            return self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
        cursor = self._conn.execute(f"SELECT * FROM {_quote(table)} LIMIT 0")
        return [(column[0], "text", "YES", "", None, "") for column in cursor.description]

    def table_hash_result(self, table: Table) -> str:
        """Upstream's hash of one table, computed in Python (see :func:`table_hash`)."""
        columns = ",".join(_quote(c) for c in table.columns)
        try:
            rows = self._conn.execute(f"SELECT {columns} FROM {_quote(table.name)}").fetchall()
        except sqlite3.Error as e:
            return mysql_error_text(e)
        return f"[({table_hash(rows)!r},)]"

    def close(self) -> None:
        """Close the connection and delete the episode's directory."""
        self._conn.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # ----------------------------------------------------------------- time limit

    def _start_clock(self) -> None:
        self._timed_out = False
        self._deadline = time.monotonic() + self._timeout_s

    def _progress(self) -> int:
        if time.monotonic() > self._deadline:
            self._timed_out = True
            return 1  # non-zero interrupts the statement
        return 0

    def _sleep(self, seconds: Any) -> int:
        """MySQL's ``SLEEP(n)``: waits, but never past the statement's deadline."""
        try:
            wanted = max(float(seconds), 0.0)
        except (TypeError, ValueError):
            wanted = 0.0
        remaining = self._deadline - time.monotonic()
        if wanted > remaining:
            time.sleep(max(remaining, 0.0))
            self._timed_out = True
            raise sqlite3.OperationalError("sleep interrupted by the query time limit")
        time.sleep(wanted)
        return 0

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")


def table_hash(rows: list[tuple[Any, ...]]) -> str | None:
    """Upstream's table hash over rows, as MySQL computes it.

    ``md5(group_concat(rowhash ORDER BY rowhash))`` over ``substring(md5(concat_ws(',', cols)), 1, 5)``, with
    ``group_concat`` cut at MySQL 8's default 1024 bytes; ``None`` (SQL NULL) for an empty table.
    """
    if not rows:
        return None
    hashes = sorted(
        hashlib.md5(",".join(str(v) for v in row if v is not None).encode("utf-8")).hexdigest()[:5] for row in rows
    )
    joined = ",".join(hashes).encode("utf-8")[:GROUP_CONCAT_MAX_LEN]
    return hashlib.md5(joined).hexdigest()


def _quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


class SQLiteBackend:
    """The embedded backend: an SQLite file per episode with MySQL shims (``fidelity="emulated"``)."""

    name = "sqlite"
    fidelity: Fidelity = "emulated"

    def __init__(self, *, query_timeout_s: float, result_limit: int) -> None:
        """Configure the backend.

        Args:
            query_timeout_s: Per-statement time limit.
            result_limit: Characters of a result the agent sees.
        """
        self.query_timeout_s = query_timeout_s
        self.result_limit = result_limit

    def open(self, sample: DBSample) -> SQLiteEpisodeDB:
        """A fresh database file holding the sample's tables."""
        return SQLiteEpisodeDB(sample, query_timeout_s=self.query_timeout_s, result_limit=self.result_limit)

    def close(self) -> None:
        """Nothing to release: every episode cleans up after itself."""
