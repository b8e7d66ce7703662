"""Removing what sandboxes of dead owners left behind (a process killed with SIGKILL cannot clean up).

A bwrap sandbox dies with its owner (``--die-with-parent``) and its mounts with its namespace, but its cgroup
and temporary directory stay; a Docker container stays until removed. Each carries its owner's pid (the
``owner.pid`` file, the ``agentrl.owner`` label), so a sweep removes exactly the leftovers of owners that are
gone and never touches a live sandbox of another process. Pools call :func:`sweep_leftovers` at start-up.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl_envs.core.errors import InfraError
from agentrl_envs.core.processes import pid_alive
from agentrl_envs.sandboxes.bwrap import OWNER_FILE, TEMP_PREFIX
from agentrl_envs.sandboxes.cgroup import leftover_groups

__all__ = ["Swept", "sweep_leftovers"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Swept:
    """What a sweep removed."""

    temp_dirs: int = 0
    cgroups: int = 0
    containers: int = 0


_GRACE_S = 60.0
"""Age under which a sandbox's cgroup or temp dir without an owner record may be one being started right now
(a sandbox creates its cgroup, then its temp dir, then the owner file), so a sweep leaves it alone."""


def _owner_alive(directory: Path) -> bool:
    try:
        return pid_alive(int((directory / OWNER_FILE).read_text()))
    except (OSError, ValueError):
        return _young(directory)  # no owner recorded: a start in progress, or an interrupted one once old


def _young(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime < _GRACE_S
    except OSError:
        return False


def sweep_leftovers(*, docker_client: Any | None = None) -> Swept:
    """Remove the temp dirs and cgroups of bwrap sandboxes, and the containers, whose owner process is gone.

    A cgroup without a temp dir, or a temp dir without an owner file, is left alone for its first minute: it
    may belong to a sandbox another process is starting (the controller sweeps at every start). A cgroup whose
    temp dir this process cannot see (another ``TMPDIR``) is removed only once no process runs in it: a dead
    owner's sandbox processes die with it, so running ones mean a live sandbox, however old.

    Args:
        docker_client: A ``docker`` SDK client to sweep containers with; ``None`` leaves containers alone.
    """
    live_ids: set[str] = set()
    dead_ids: set[str] = set()
    temp_dirs = 0
    for directory in Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}*"):
        sandbox_id = directory.name[len(TEMP_PREFIX) :].split("-", 1)[0]
        if _owner_alive(directory):
            live_ids.add(sandbox_id)
            continue
        shutil.rmtree(directory, ignore_errors=True)
        dead_ids.add(sandbox_id)
        temp_dirs += 1
    cgroups = 0
    for sandbox_id, group in leftover_groups().items():
        if sandbox_id in live_ids:
            continue
        if sandbox_id not in dead_ids:
            # No temp dir of ours names it: a sandbox starting in another process (young), one of a process
            # whose TMPDIR differs (its processes run: a dead owner's die with it), or a dead owner's, emptied.
            if group.pids() or any(_young(path) for path in group.dirs.values()):
                continue
        try:
            group.destroy()
            cgroups += 1
        except InfraError:
            logger.warning("sweep: could not remove the cgroup of sandbox %s", sandbox_id, exc_info=True)
    return Swept(temp_dirs, cgroups, _sweep_containers(docker_client) if docker_client is not None else 0)


def _sweep_containers(client: Any) -> int:
    from agentrl_envs.sandboxes.docker import LABEL, OWNER_LABEL

    host = socket.gethostname()
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        owner_host, _, pid = str(container.labels.get(OWNER_LABEL, "")).rpartition(":")
        if owner_host == host and pid.isdigit() and pid_alive(int(pid)):
            continue
        if owner_host and owner_host != host:
            continue  # another machine's engine client: not ours to judge
        with contextlib.suppress(Exception):
            container.remove(force=True)
            removed += 1
    return removed
