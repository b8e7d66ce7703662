"""The ``mariadb`` DBBench backend: a real MySQL-compatible server, as upstream uses (``fidelity="upstream"``).

Every episode gets its own fresh database and a user granted rights on that database only, so an agent's
``DROP``/``USE``/``GRANT`` cannot reach anything else. Sessions are set up like upstream's ``mysql:8`` server:
MySQL 8's ``sql_mode`` (less strict mode, see :data:`SQL_MODE`), ``group_concat_max_len`` (it caps the table
hash input) and recursion limit. The per-query limit is ``max_statement_time``, backed by a watchdog that kills
the query should the agent lift it. Results and errors are worded as mysql.connector (upstream's client) words
them: ``str(list of tuples)`` and ``<errno> (<sqlstate>): <message>``.
"""

from __future__ import annotations

import logging
import secrets
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from agentrl_envs.core.env import Fidelity
from agentrl_envs.core.errors import BackendUnavailableError, EnvError, InfraError
from agentrl_envs.tasks.db.base import GROUP_CONCAT_MAX_LEN, QueryTimeoutError, format_rows
from agentrl_envs.tasks.db.data import DBSample, Table
from agentrl_envs.tasks.db.mariadb_server import acquire_server, release_server

__all__ = ["SQL_MODE", "MariaDBBackend", "MariaDBEpisodeDB", "mysql_error_text", "parse_mysql_url"]

logger = logging.getLogger(__name__)

SQL_MODE = "ONLY_FULL_GROUP_BY,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
"""MySQL 8's default ``sql_mode`` without ``STRICT_TRANS_TABLES``: the gold hashes need updates such as
``WHERE text_column = 16`` over non-numeric text to go through, which strict mode refuses (error 1292)."""
MYSQL8_RECURSION_LIMIT = 1000
"""MySQL 8's ``cte_max_recursion_depth``; MariaDB's counterpart is ``max_recursive_iterations``."""
_TIMEOUT_ERRORS = {1317, 1969, 3024}
"""Query interrupted, MariaDB's and MySQL's "maximum statement execution time exceeded"."""
_WATCHDOG_GRACE_S = 0.5
_SQLSTATES = {
    1044: "42000", 1045: "28000", 1046: "3D000", 1048: "23000", 1049: "42000", 1050: "42S01", 1051: "42S02",
    1052: "23000", 1054: "42S22", 1055: "42000", 1060: "42S21", 1061: "42000", 1062: "23000", 1064: "42000",
    1091: "42000", 1111: "HY000", 1136: "21S01", 1142: "42000", 1143: "42000", 1146: "42S02", 1149: "42000",
    1166: "42000", 1222: "21000", 1241: "21000", 1242: "21000", 1248: "42000", 1264: "22003", 1292: "22007",
    1305: "42000", 1317: "70100", 1365: "22012", 1366: "22007", 1406: "22001", 1582: "42000", 1583: "42000",
    1630: "42000", 1969: "70100",
}  # fmt: skip
"""SQLSTATEs of common server errors: pymysql drops the one the server sends, mysql.connector shows it."""


def mysql_error_text(error: BaseException) -> str:
    """A pymysql error worded like mysql.connector's ``str(error)``: ``<errno> (<sqlstate>): <message>``."""
    args = getattr(error, "args", ())
    if len(args) >= 2 and isinstance(args[0], int):
        return f"{args[0]} ({_SQLSTATES.get(args[0], 'HY000')}): {args[1]}"
    return str(error)


def parse_mysql_url(url: str) -> dict[str, Any]:
    """Connection arguments from ``mysql://user:password@host:port/`` or ``mysql://user@/?unix_socket=/path``.

    Raises:
        EnvError: If the URL is not a ``mysql://``/``mariadb://`` URL.
    """
    parsed = urlparse(url)
    if parsed.scheme not in ("mysql", "mariadb"):
        raise EnvError(f"mariadb_url must look like mysql://user:password@host:3306/, got {url!r}.")
    options: dict[str, Any] = {"user": unquote(parsed.username or "root")}
    if parsed.password is not None:
        options["password"] = unquote(parsed.password)
    socket = parse_qs(parsed.query).get("unix_socket")
    if socket:
        options["unix_socket"] = socket[0]
    else:
        options["host"] = parsed.hostname or "127.0.0.1"
        options["port"] = parsed.port or 3306
    return options


def _quote(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


@dataclass(frozen=True, slots=True)
class _Slot:
    """A database name and the user that may use it (and nothing else); reused by later episodes."""

    name: str
    password: str


def _insert_statement(table: Table) -> str:
    """``INSERT INTO t (cols) VALUES (%s,...),...`` with the names' own ``%`` escaped for pymysql's formatting."""
    names = ",".join(_quote(c) for c in table.columns).replace("%", "%%")
    row = "(" + ",".join(["%s"] * len(table.columns)) + ")"
    return f"INSERT INTO {_quote(table.name).replace('%', '%%')} ({names}) VALUES {','.join([row] * len(table.rows))}"


class MariaDBEpisodeDB:
    """One episode's database and connection on a MariaDB server."""

    def __init__(self, backend: MariaDBBackend, sample: DBSample) -> None:
        """Create the database, connect as its user and load the sample's tables."""
        self._backend = backend
        self._slot: _Slot | None = None
        self._conn: Any = None
        self._thread_id = 0
        try:
            self._slot, self._conn = backend.create_database()
            self._setup_session()
            self._load(sample.tables)
        except BaseException:
            self.close()
            raise

    def _setup_session(self) -> None:
        with self._conn.cursor() as cursor:
            cursor.execute(
                "SET SESSION sql_mode=%s, group_concat_max_len=%s, max_recursive_iterations=%s, max_statement_time=%s",
                (SQL_MODE, GROUP_CONCAT_MAX_LEN, MYSQL8_RECURSION_LIMIT, self._backend.query_timeout_s),
            )
        self._thread_id = self._conn.thread_id()

    def _load(self, tables: tuple[Table, ...]) -> None:
        # as upstream's _build_init_sql: TEXT columns, one INSERT with every row as %s parameters
        with self._conn.cursor() as cursor:
            for table in tables:
                columns = ",".join(f"{_quote(c)} TEXT" for c in table.columns)
                cursor.execute(f"CREATE TABLE IF NOT EXISTS {_quote(table.name)} ({columns})")
                if table.rows:
                    cursor.execute(_insert_statement(table), [cell for row in table.rows for cell in row])

    def execute(self, sql: str) -> str:
        """Run one agent statement (see :meth:`EpisodeDB.execute`)."""
        import pymysql

        watchdog = threading.Timer(self._backend.query_timeout_s + _WATCHDOG_GRACE_S, self._kill_query)
        watchdog.daemon = True
        watchdog.start()
        try:
            with self._conn.cursor(pymysql.cursors.SSCursor) as cursor:
                cursor.execute(sql)
                if cursor.description is None:
                    return "[]"
                return format_rows(cursor, self._backend.result_limit)[0]
        except pymysql.MySQLError as e:
            code = e.args[0] if e.args and isinstance(e.args[0], int) else None
            if code in _TIMEOUT_ERRORS:
                raise QueryTimeoutError(str(e)) from e
            if isinstance(e, pymysql.err.InterfaceError) or (code is not None and 2000 <= code < 3000):
                self._reconnect(e)
            return mysql_error_text(e)
        finally:
            watchdog.cancel()

    def _reconnect(self, error: Exception) -> None:
        """Replace a lost connection, or raise :class:`InfraError` if the server cannot be reached.

        The agent can end its own connection (``KILL CONNECTION_ID()``); the next statement then finds it gone.
        That is the agent's doing, answered with MySQL's error as upstream's client would show it, so a new
        connection (with the episode's session settings) takes its place. Only a server that refuses the new
        connection is an infrastructure fault.
        """
        assert self._slot is not None, "the episode database is closed"
        try:
            self._conn.close()
        except Exception:  # already closed by the server
            pass
        try:
            self._conn = self._backend.connect_as(self._slot)
            self._setup_session()
        except Exception as e:
            raise InfraError(f"MariaDB connection failed: {error}; reconnecting failed too: {e}") from e
        logger.info("MariaDB episode connection lost (%s); reconnected as thread %s", error, self._thread_id)

    def _kill_query(self) -> None:
        logger.warning("Killing the query of MariaDB thread %s: it outlived max_statement_time", self._thread_id)
        self._backend.kill_query(self._thread_id)

    def table_hash_result(self, table: Table) -> str:
        """Upstream's hash query for one table, run on a connection the agent cannot reconfigure."""
        assert self._slot is not None, "the episode database is closed"
        return self._backend.table_hash_result(self._slot.name, table)

    def close(self) -> None:
        """Close the connection and drop the database (idempotent)."""
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # the connection may already be gone; dropping below still cleans up
                pass
            self._conn = None
        if self._slot is not None:
            slot, self._slot = self._slot, None
            self._backend.drop_database(slot)


class MariaDBBackend:
    """Episode databases on a MariaDB server: a private one it starts, or the one at ``url``."""

    name = "mariadb"
    fidelity: Fidelity = "upstream"

    def __init__(self, *, query_timeout_s: float, result_limit: int, url: str | None = None) -> None:
        """Connect to (or start) the server.

        Args:
            query_timeout_s: Per-statement time limit.
            result_limit: Characters of a result the agent sees.
            url: An existing server (``mysql://user:password@host:port/``); the user needs rights to create
                databases and users. ``None`` starts a private server from Debian's ``mariadb-server``.

        Raises:
            BackendUnavailableError: If pymysql or the MariaDB server binaries are missing.
        """
        try:
            import pymysql  # noqa: F401
        except ImportError as e:
            raise BackendUnavailableError(
                "The mariadb backend needs pymysql: pip install 'agentrl-envs[mariadb]'."
            ) from e
        self.query_timeout_s = query_timeout_s
        self.result_limit = result_limit
        self._owns_server = url is None
        if url is None:
            server = acquire_server()
            self._connect_args: dict[str, Any] = {"unix_socket": server.socket, "user": "root"}
            self._user_host = "localhost"
        else:
            self._connect_args = parse_mysql_url(url)
            self._user_host = "localhost" if "unix_socket" in self._connect_args else "%"
        self._admin: Any = None
        self._killer: Any = None
        self._killer_lock = threading.Lock()
        self._slots_lock = threading.Lock()
        self._free_slots: list[_Slot] = []
        self._slots: list[_Slot] = []
        self._closed = False

    def _connect(self, **kwargs: Any) -> Any:
        import pymysql

        options: dict[str, Any] = {"charset": "utf8mb4", "autocommit": True, "connect_timeout": 10}
        if "unix_socket" in self._connect_args:
            options["ssl_disabled"] = True  # a local socket needs no TLS, and setting it up costs 200 ms
        try:
            return pymysql.connect(**(options | self._connect_args | kwargs))
        except pymysql.MySQLError as e:
            raise InfraError(f"Cannot connect to MariaDB ({self._describe()}): {e}") from e

    def _describe(self) -> str:
        args = self._connect_args
        return args.get("unix_socket") or f"{args.get('host')}:{args.get('port')}"

    def _admin_cursor(self) -> Any:
        if self._admin is None or not self._admin.open:
            self._admin = self._connect()
            with self._admin.cursor() as cursor:
                cursor.execute("SET SESSION group_concat_max_len=%s", (GROUP_CONCAT_MAX_LEN,))
        return self._admin.cursor()

    def open(self, sample: DBSample) -> MariaDBEpisodeDB:
        """A fresh database holding the sample's tables."""
        if self._closed:
            raise EnvError("This MariaDB backend is closed; make a new environment.")
        return MariaDBEpisodeDB(self, sample)

    def create_database(self) -> tuple[_Slot, Any]:
        """Create an empty episode database; return its slot and a connection as its user.

        Creating a user costs milliseconds, so users are made once per backend and reused: each may use its
        own database name only, and the database is dropped and created afresh for every episode.
        """
        with self._slots_lock:
            slot = self._free_slots.pop() if self._free_slots else None
        with self._admin_cursor() as cursor:
            if slot is None:
                slot = _Slot(f"dbbench_{secrets.token_hex(8)}", secrets.token_urlsafe(16))
                user = f"'{slot.name}'@'{self._user_host}'"
                cursor.execute(f"CREATE USER {user} IDENTIFIED BY %s", (slot.password,))
                cursor.execute(f"GRANT ALL PRIVILEGES ON {_quote(slot.name)}.* TO {user}")
                self._slots.append(slot)
            cursor.execute(f"CREATE DATABASE {_quote(slot.name)} CHARACTER SET utf8mb4")
        try:
            return slot, self.connect_as(slot)
        except BaseException:
            self.drop_database(slot)
            raise

    def connect_as(self, slot: _Slot) -> Any:
        """A new connection as the episode user of ``slot``, to its database."""
        return self._connect(user=slot.name, password=slot.password, database=slot.name)

    def drop_database(self, slot: _Slot) -> None:
        """Drop an episode database (errors are logged: cleanup must not mask an episode's outcome)."""
        try:
            with self._admin_cursor() as cursor:
                cursor.execute(f"DROP DATABASE IF EXISTS {_quote(slot.name)}")
        except Exception:
            logger.exception("Could not drop MariaDB database %s", slot.name)
            return  # a database that may still exist is not handed to another episode
        with self._slots_lock:
            self._free_slots.append(slot)

    def table_hash_result(self, database: str, table: Table) -> str:
        """Upstream's hash query on ``database``.``table``, as a raw result string."""
        import pymysql

        columns = ",".join(_quote(c) for c in table.columns)
        query = (
            f"select md5(group_concat(rowhash order by rowhash)) as hash "
            f"from( SELECT substring(MD5(CONCAT_WS(',', {columns})), 1, 5) AS rowhash "
            f"FROM {_quote(database)}.{_quote(table.name)}) as sub;"
        )
        try:
            with self._admin_cursor() as cursor:
                cursor.execute(query)
                return format_rows(cursor.fetchall(), self.result_limit)[0]
        except pymysql.MySQLError as e:
            return mysql_error_text(e)

    def kill_query(self, thread_id: int) -> None:
        """Interrupt the statement a connection is running (called from watchdog threads)."""
        with self._killer_lock:
            try:
                if self._killer is None:
                    self._killer = self._connect()
                with self._killer.cursor() as cursor:
                    cursor.execute(f"KILL QUERY {int(thread_id)}")
            except Exception:
                logger.exception("Could not kill the query of MariaDB thread %s", thread_id)

    def _drop_users(self) -> None:
        try:
            with self._admin_cursor() as cursor:
                for slot in self._slots:
                    cursor.execute(f"DROP DATABASE IF EXISTS {_quote(slot.name)}")
                    cursor.execute(f"DROP USER IF EXISTS '{slot.name}'@'{self._user_host}'")
        except Exception:
            logger.exception("Could not drop the episode users of this MariaDB backend")
        self._slots.clear()
        self._free_slots.clear()

    def close(self) -> None:
        """Drop the episode users, close the admin connections and release a private server (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._slots:
            self._drop_users()
        for conn in (self._admin, self._killer):
            if conn is not None:
                try:
                    conn.close()
                except Exception:  # already closed by the server
                    pass
        self._admin = self._killer = None
        if self._owns_server:
            release_server()
