"""What every DBBench backend implements and shares: the episode-database protocols and result formatting.

A :class:`DBBackend` hands out one :class:`EpisodeDB` per episode: a database holding the sample's tables,
created as upstream does (every column ``TEXT``, every cell ``str(cell)``), that runs the agent's SQL and
computes the table hash used to grade modifications. Results are strings exactly as upstream shows them:
``str(list of row tuples)`` or the error text, cut to the truncation limit. The backends import this module;
:mod:`agentrl_envs.tasks.db.backend` chooses among them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol, runtime_checkable

from agentrl_envs.core.env import Fidelity
from agentrl_envs.core.processes import pid_alive
from agentrl_envs.tasks.db.data import DBSample, Table

__all__ = [
    "GROUP_CONCAT_MAX_LEN",
    "DBBackend",
    "EpisodeDB",
    "QueryTimeoutError",
    "format_rows",
    "private_dir",
    "scratch_dir",
]

GROUP_CONCAT_MAX_LEN = 1024
"""MySQL 8's default ``group_concat_max_len`` (upstream's server is the ``mysql:8`` image); it caps the
table hash input, so both backends apply it."""


class QueryTimeoutError(Exception):
    """A statement ran past the per-query time limit (upstream answers "Error: SQL execution timed out.")."""


@runtime_checkable
class EpisodeDB(Protocol):
    """One episode's own database."""

    def execute(self, sql: str) -> str:
        """Run one statement; the rows as ``str(list of tuples)``, or the database's error text.

        Raises:
            QueryTimeoutError: If the statement ran past the time limit.
            InfraError: If the database itself failed (not the agent's SQL).
        """
        ...

    def table_hash_result(self, table: Table) -> str:
        """The raw result of upstream's hash query for one table (``"[('9f0c...',)]"`` or an error text)."""
        ...

    def close(self) -> None:
        """Drop the database and release its resources (idempotent)."""
        ...


class DBBackend(Protocol):
    """A source of episode databases."""

    name: str
    fidelity: Fidelity

    def open(self, sample: DBSample) -> EpisodeDB:
        """Create a database holding the sample's tables."""
        ...

    def close(self) -> None:
        """Release the backend (stop a server it started, once no one else uses it)."""
        ...


def scratch_dir() -> str | None:
    """Where episode databases keep their files: RAM (``/dev/shm``) when there is one, else the temp dir.

    Upstream's MySQL keeps its data on a tmpfs too; episode files are created and deleted every reset, which
    costs milliseconds on a disk and microseconds in RAM.
    """
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


_swept: set[str] = set()


def private_dir(kind: str) -> Path:
    """A new directory for this process's ``kind`` files (``agentrl-<kind>-<pid>-*`` in :func:`scratch_dir`).

    The owner's pid is in the name because a process killed with SIGKILL cannot delete its directories: the
    first call of each kind in a process removes those whose owner no longer runs (a live owner, or a reused
    pid, keeps them), so killed workers do not fill the RAM disk.
    """
    root = Path(scratch_dir() or tempfile.gettempdir())
    if kind not in _swept:
        _swept.add(kind)
        for path in root.glob(f"agentrl-{kind}-*-*"):
            owner = path.name.split("-")[2]
            if owner.isdigit() and not pid_alive(int(owner)):
                shutil.rmtree(path, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"agentrl-{kind}-{os.getpid()}-", dir=root))


def format_rows(rows: Iterable[tuple[object, ...]], limit: int) -> tuple[str, bool]:
    """``str(list(rows))``, but reading rows only until the text is longer than ``limit``.

    The agent sees at most ``limit`` characters, so once the text is longer the rest cannot matter; this keeps
    a ``SELECT`` of a million rows cheap.

    Returns:
        The text and whether every row was read (if not, the text is a prefix longer than ``limit``).
    """
    parts: list[str] = []
    length = -1  # len("[") minus the separator the first row does not get
    iterator: Iterator[tuple[object, ...]] = iter(rows)
    for row in iterator:
        text = repr(row)
        parts.append(text)
        length += len(text) + 2
        if length > limit:
            return "[" + ", ".join(parts), False
    return "[" + ", ".join(parts) + "]", True
