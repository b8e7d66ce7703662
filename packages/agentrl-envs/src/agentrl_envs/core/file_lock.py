"""An exclusive lock between processes, held on a lock file (``flock``), for building a cached artifact once."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Generator
from pathlib import Path

__all__ = ["file_lock"]


@contextlib.contextmanager
def file_lock(path: Path) -> Generator[None]:
    """Hold the exclusive lock of ``path`` (created if missing) for the block; other holders wait.

    The kernel drops the lock when its holder dies, so a killed build never leaves a stuck lock behind.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
