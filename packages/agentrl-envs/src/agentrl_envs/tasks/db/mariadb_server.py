"""A private MariaDB server for the ``mariadb`` backend, started from Debian's ``mariadb-server``.

The server runs ``mariadbd`` on a unix socket in a temporary data directory with networking off, so nothing
outside this machine (or this user) can reach it. One server is shared by every backend of the process
(reference-counted through :func:`acquire_server`/:func:`release_server`) and stopped when the last one is
released, or at interpreter exit. Settings follow upstream's ``mysql:8`` container where MariaDB has them:
``utf8mb4`` text with a case- and accent-insensitive collation.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from agentrl_envs.core.errors import BackendUnavailableError, InfraError
from agentrl_envs.core.processes import SharedServer, spawn, stop_process
from agentrl_envs.tasks.db.base import private_dir

__all__ = ["MariaDBServer", "acquire_server", "release_server"]

logger = logging.getLogger(__name__)

_SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin", "/sbin"])
_START_TIMEOUT_S = 60.0
_INSTALL_HINT = "install Debian's MariaDB server: apt-get install mariadb-server"


def _which(program: str) -> str:
    path = shutil.which(program, path=_SEARCH_PATH)
    if path is None:
        raise BackendUnavailableError(f"The mariadb backend needs {program!r}, which is not installed; {_INSTALL_HINT}")
    return path


class MariaDBServer:
    """One ``mariadbd`` process with its own data directory and socket."""

    def __init__(self) -> None:
        """Locate the binaries (nothing starts yet).

        Raises:
            BackendUnavailableError: If ``mariadbd`` or ``mariadb-install-db`` is missing.
        """
        self._mariadbd = _which("mariadbd")
        self._install_db = _which("mariadb-install-db")
        self._dir: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> str:
        """The unix socket clients connect to."""
        if self._dir is None:
            raise InfraError("The MariaDB server is not running.")
        return str(self._dir / "mysqld.sock")

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Initialise a data directory and start the server; returns once it accepts connections.

        Raises:
            InfraError: If initialisation or start-up fails (the message holds the server log's tail).
        """
        self._dir = private_dir("mariadb")
        (self._dir / "files").mkdir()
        try:
            self._install()
            self._launch()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        logger.info("MariaDB server started on %s (pid %s)", self.socket, self._process and self._process.pid)

    def _user_args(self) -> list[str]:
        return ["--user=root"] if os.geteuid() == 0 else []

    def _install(self) -> None:
        assert self._dir is not None
        command = [
            self._install_db,
            "--no-defaults",
            f"--datadir={self._dir / 'data'}",
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            *self._user_args(),
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise InfraError(f"mariadb-install-db failed ({done.returncode}): {(done.stderr or done.stdout)[-2000:]}")

    def _launch(self) -> None:
        assert self._dir is not None
        command = [
            self._mariadbd,
            "--no-defaults",
            f"--datadir={self._dir / 'data'}",
            f"--socket={self.socket}",
            f"--pid-file={self._dir / 'mysqld.pid'}",
            f"--log-error={self._dir / 'error.log'}",
            f"--secure-file-priv={self._dir / 'files'}",
            "--skip-networking",
            "--skip-log-bin",
            "--performance-schema=OFF",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_unicode_520_ci",
            "--innodb-buffer-pool-size=128M",
            "--innodb-log-file-size=32M",
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-doublewrite=0",
            "--max-connections=500",
            *self._user_args(),
        ]
        # Stopped (SIGTERM) when this process dies, whichever thread started it.
        self._process = spawn(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if not self.running:
                raise InfraError(f"mariadbd exited during start-up: {self._log_tail()}")
            try:
                self.connect().close()
                return
            except Exception:  # not accepting connections yet
                time.sleep(0.05)
        raise InfraError(f"mariadbd did not accept connections within {_START_TIMEOUT_S} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        log = self._dir / "error.log" if self._dir else None
        return log.read_text(errors="replace")[-2000:] if log and log.exists() else "(no log)"

    def connect(self, **kwargs: Any) -> Any:
        """A pymysql connection as root over the socket (``kwargs`` go to ``pymysql.connect``)."""
        import pymysql

        options = {
            "unix_socket": self.socket,
            "user": "root",
            "charset": "utf8mb4",
            "autocommit": True,
            "ssl_disabled": True,
        }
        return pymysql.connect(**(options | kwargs))

    def stop(self) -> None:
        """Stop the server and delete its data directory (idempotent)."""
        if self._process is not None:
            stop_process(self._process)
            self._process = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def _started() -> MariaDBServer:
    server = MariaDBServer()
    server.start()
    return server


_server: SharedServer[MariaDBServer] = SharedServer(_started)
acquire_server = _server.acquire
"""The process's shared server, started on first use; pair every call with :func:`release_server`."""
release_server = _server.release
"""Drop one user of the shared server; the last one stops it."""
