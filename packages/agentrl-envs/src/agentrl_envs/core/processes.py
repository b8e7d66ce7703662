"""Helpers for the local processes backends start: liveness by pid and one shared server per process."""

from __future__ import annotations

import atexit
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, Protocol, TypeVar

__all__ = ["SharedServer", "pid_alive", "stop_process"]


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs (one owned by another user counts as running).

    A zombie does not: a killed process whose parent died too may wait a long time to be reaped (by an init
    that reaps lazily, or a subreaper that never does), and it can no longer clean up after itself.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True  # no procfs: trust the signal check
    return state != "Z"


def stop_process(process: subprocess.Popen, *, timeout_s: float = 30.0) -> None:
    """Terminate ``process`` and wait for it; kill it if it has not exited after ``timeout_s``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class _Server(Protocol):
    @property
    def running(self) -> bool: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=_Server)


class SharedServer(Generic[S]):
    """One server per Python process, shared by reference count and stopped with its last user or at exit.

    Backends that start a heavyweight server (MariaDB, Virtuoso) hold it here so that every env of a process
    uses the same one; a server found dead is replaced on the next :meth:`acquire`.
    """

    def __init__(self, start: Callable[[], S]) -> None:
        """Remember how to start a server (a callable returning a started one); nothing starts yet."""
        self._start = start
        self._lock = threading.Lock()
        self._server: S | None = None
        self._users = 0
        atexit.register(self.stop)

    def acquire(self) -> S:
        """The shared server, started on first use; pair every call with :meth:`release`."""
        with self._lock:
            if self._server is None or not self._server.running:
                self._server = self._start()
            self._users += 1
            return self._server

    def release(self) -> None:
        """Drop one user; the last one stops the server."""
        with self._lock:
            self._users = max(self._users - 1, 0)
            if self._users == 0:
                self._stop_locked()

    def stop(self) -> None:
        """Stop the server now, whoever still uses it (interpreter exit)."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
