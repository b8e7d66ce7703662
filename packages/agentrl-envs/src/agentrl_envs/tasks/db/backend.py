"""The choice of DBBench backend: the embedded ``sqlite`` or a ``mariadb`` server.

The interface they implement (:class:`DBBackend`, :class:`EpisodeDB`) and what they share live in
:mod:`agentrl_envs.tasks.db.base`, re-exported here.
"""

from __future__ import annotations

from agentrl_envs.core.errors import EnvError
from agentrl_envs.tasks.db.base import (
    GROUP_CONCAT_MAX_LEN,
    DBBackend,
    EpisodeDB,
    QueryTimeoutError,
    format_rows,
    private_dir,
    scratch_dir,
)

__all__ = [
    "BACKENDS",
    "GROUP_CONCAT_MAX_LEN",
    "DBBackend",
    "EpisodeDB",
    "QueryTimeoutError",
    "format_rows",
    "make_backend",
    "private_dir",
    "scratch_dir",
]

BACKENDS = ("sqlite", "mariadb")


def make_backend(
    name: str | None,
    *,
    query_timeout_s: float,
    result_limit: int,
    mariadb_url: str | None = None,
) -> DBBackend:
    """Build a backend by name (``None`` means the embedded ``sqlite``).

    Args:
        name: ``sqlite`` or ``mariadb``.
        query_timeout_s: Per-statement time limit.
        result_limit: Characters of a result the agent sees; backends fetch only the rows this needs.
        mariadb_url: ``mysql://user:password@host:port`` or ``mysql://user@/?unix_socket=/path`` of an existing
            server; without it the ``mariadb`` backend starts its own.

    Raises:
        EnvError: For an unknown backend name or options that do not fit it.
    """
    name = name or "sqlite"
    if query_timeout_s <= 0:
        raise EnvError(f"query_timeout_s must be positive, got {query_timeout_s}.")
    if name == "sqlite":
        if mariadb_url is not None:
            raise EnvError("mariadb_url is only used by backend='mariadb'; drop it or choose that backend.")
        from agentrl_envs.tasks.db.sqlite_backend import SQLiteBackend

        return SQLiteBackend(query_timeout_s=query_timeout_s, result_limit=result_limit)
    if name == "mariadb":
        from agentrl_envs.tasks.db.mariadb_backend import MariaDBBackend

        return MariaDBBackend(query_timeout_s=query_timeout_s, result_limit=result_limit, url=mariadb_url)
    raise EnvError(f"Unknown DB backend {name!r}; choose one of {list(BACKENDS)}.")
