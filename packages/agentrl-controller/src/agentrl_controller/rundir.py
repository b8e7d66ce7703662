"""The controller's run directory (its workers' Unix sockets and logs), and the sweep of those killed owners left.

A controller stopped normally removes its run directory; one killed with SIGKILL cannot, and its workers (which
exit on their own once their parent is gone) leave their sockets and logs behind. The owner's pid is therefore in
the directory's name, ``agentrl-ctl-<pid>-<random>``, and every controller start removes the directories whose
owner no longer runs. A live owner keeps its directory, and so does a reused pid (the safe direction); a zombie
counts as gone (see :func:`agentrl_envs.core.processes.pid_alive`).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

from agentrl_envs.core.processes import pid_alive

__all__ = ["PREFIX", "make_run_dir", "sweep_run_dirs"]

logger = logging.getLogger(__name__)

PREFIX = "agentrl-ctl-"


def make_run_dir(root: Path | None = None) -> Path:
    """A new private run directory ``<root>/agentrl-ctl-<pid>-<random>`` (``root``: the temp dir by default)."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=root))


def sweep_run_dirs(root: Path | None = None) -> list[Path]:
    """Remove the run directories under ``root`` (the temp dir) whose owner process is gone; returns them.

    Directories without an owner pid in the name (made before the pid was added) are left alone: nothing tells
    whether their controller still runs.
    """
    root = Path(root or tempfile.gettempdir())
    removed = []
    for path in root.glob(f"{PREFIX}*-*"):
        owner = path.name[len(PREFIX) :].split("-", 1)[0]
        if not owner.isdigit() or pid_alive(int(owner)) or not path.is_dir() or path.is_symlink():
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    if removed:
        logger.warning("removed %d run directories of controllers that are gone: %s", len(removed), removed[:5])
    return removed
