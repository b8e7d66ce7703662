"""Folders put in place whole: built in a hidden staging folder beside the destination, under a lock, then renamed.

Both pinned artifacts the package fetches (the AgentBench data root and BFCL's extracted wheel) are installed this
way, so a failed or killed build leaves nothing at the destination and two processes building the same folder at
once build it once.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

from agentrl_envs.core.file_lock import file_lock

__all__ = ["locked", "staged"]


@contextlib.contextmanager
def locked(dest: Path) -> Iterator[None]:
    """Hold the build lock of a destination (other builders of it wait).

    Staging folders left by builds that were killed are cleared while the lock is held.
    """
    with file_lock(dest.parent / f".{dest.name}.lock"):
        for stale in dest.parent.glob(f".{dest.name}.*-*"):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
        yield


@contextlib.contextmanager
def staged(dest: Path) -> Iterator[Path]:
    """A fresh, empty staging folder for ``dest``; when the block ends without an error it replaces ``dest``.

    The caller holds :func:`locked`. An error inside the block removes the staging folder and leaves ``dest`` as
    it was.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f".{dest.name}.staging-{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    try:
        yield staging
        _swap(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _swap(staging: Path, dest: Path) -> None:
    """Put the finished folder in place: one rename, after moving an old one aside."""
    if not dest.exists():
        staging.rename(dest)
        return
    old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:8]}"
    dest.rename(old)
    staging.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
