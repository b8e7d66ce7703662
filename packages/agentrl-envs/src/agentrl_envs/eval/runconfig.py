"""The ``config`` block of ``results.json``: what was evaluated, so a result stands on its own.

It names the agent and model(s), the endpoint and sampling settings, every task with its split, backend and
fidelity, the runs and seed, the package versions and the data root's upstream commit. ``--resume`` compares
the identity part of it (:func:`identity`) with the earlier run's before adding episodes to it.
"""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import AgentRLError
from agentrl_envs.data import read_info

__all__ = ["data_commit", "identity", "package_versions"]

_PACKAGES = ("agentrl-envs", "agentrl-controller", "agentrl-trainer", "gymnasium", "httpx", "pydantic")
_IDENTITY = ("agent", "models", "model_weights", "base_url", "controller", "sampling", "tasks", "runs", "seed")


def package_versions() -> dict[str, str]:
    """Python's version and those of the installed packages that shape a result."""
    versions = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def data_commit(data: DataRoot | None) -> dict[str, str | None]:
    """The data root the tasks read and the upstream commit it was built from (``None`` where none was read).

    The commit is the one the data fetch recorded (:func:`agentrl_envs.data.read_info`); a root built another
    way falls back to the ``source`` block of its ``prompts.json``.
    """
    if data is None:
        return {"root": None, "commit": None}
    try:
        source = data.json("prompts.json").get("source") or {}
    except (AgentRLError, OSError, ValueError):
        source = {}
    info = read_info(data.path)
    commit = info.commit if info is not None else source.get("commit")
    return {"root": str(data.path), "commit": commit, "repo": source.get("repo")}


def identity(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a config that must match for ``--resume`` to add episodes to a run."""
    same = {key: config.get(key) for key in _IDENTITY}
    same["tasks"] = {
        name: {key: task.get(key) for key in ("split", "options", "indices", "limit")}
        for name, task in (config.get("tasks") or {}).items()
    }
    return same


def now() -> str:
    """The current UTC time, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")
