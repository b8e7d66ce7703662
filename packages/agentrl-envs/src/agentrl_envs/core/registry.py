"""The five AgentBench tasks: their names, env ids and Gymnasium registration.

Each task has a short name (``db``), a versioned env id (``AgentBench/DB-v0``) and upstream's controller
names (``dbbench-std`` for test, ``dbbench-env_train`` for train, ``dbbench-dev`` for dev). The table is
explicit; a task whose environment has not landed yet has no entry point and is not registered.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from agentrl_envs.core.errors import UnknownTaskError

__all__ = ["TASKS", "TaskSpec", "make", "register_envs", "resolve_task"]

_SPLIT_SUFFIX = {"test": "std", "train": "env_train", "dev": "dev"}


@dataclass(frozen=True)
class TaskSpec:
    """Names and entry point of one task."""

    short_name: str
    env_id: str
    upstream_key: str
    """The task's key in ``prompts.json`` and prefix of its upstream names (``dbbench`` for ``db``)."""
    config_name: str
    """``configs/tasks/<config_name>.yaml`` in the data root."""
    entry_point: str | None
    """``module:Class`` of the environment, or ``None`` while the task is not implemented."""
    oracle: str | None = None
    """``module:Class`` of the task's :class:`~agentrl_envs.core.oracle.Oracle`."""

    def upstream_name(self, split: str) -> str:
        """Upstream's controller name for a split, e.g. ``dbbench-std`` for ``test``."""
        return f"{self.upstream_key}-{_SPLIT_SUFFIX[split]}"


TASKS: dict[str, TaskSpec] = {
    spec.short_name: spec
    for spec in (
        TaskSpec(
            "alfworld",
            "AgentBench/ALFWorld-v0",
            "alfworld",
            "alfworld",
            "agentrl_envs.tasks.alfworld.env:AlfworldEnv",
            "agentrl_envs.tasks.alfworld.oracle:AlfworldOracle",
        ),
        TaskSpec(
            "db",
            "AgentBench/DB-v0",
            "dbbench",
            "dbbench",
            "agentrl_envs.tasks.db.env:DBEnv",
            "agentrl_envs.tasks.db.oracle:DBOracle",
        ),
        TaskSpec(
            "kg",
            "AgentBench/KG-v0",
            "kg",
            "kg",
            "agentrl_envs.tasks.kg.env:KGEnv",
            "agentrl_envs.tasks.kg.oracle:KGOracle",
        ),
        TaskSpec(
            "os",
            "AgentBench/OS-v0",
            "os",
            "os",
            "agentrl_envs.tasks.os.env:OSEnv",
            "agentrl_envs.tasks.os.oracle:OSOracle",
        ),
        TaskSpec(
            "webshop",
            "AgentBench/WebShop-v0",
            "webshop",
            "webshop",
            "agentrl_envs.tasks.webshop.env:WebShopEnv",
            "agentrl_envs.tasks.webshop.oracle:WebShopOracle",
        ),
    )
}


def register_envs() -> None:
    """Register every implemented task with Gymnasium (idempotent)."""
    for spec in TASKS.values():
        if spec.entry_point is not None and spec.env_id not in gym.registry:
            gym.register(id=spec.env_id, entry_point=spec.entry_point, disable_env_checker=False)


def resolve_task(name: str) -> tuple[TaskSpec, str | None]:
    """Find a task by short name, env id or upstream name.

    Returns:
        The task and, for upstream names, the split they denote (``None`` otherwise).

    Raises:
        UnknownTaskError: With a "Did you mean" hint.
    """
    known: dict[str, tuple[TaskSpec, str | None]] = {}
    for spec in TASKS.values():
        known[spec.short_name] = (spec, None)
        known[spec.env_id] = (spec, None)
        for split in _SPLIT_SUFFIX:
            known[spec.upstream_name(split)] = (spec, split)
    if name in known:
        return known[name]
    hint = difflib.get_close_matches(name, list(known), n=1)
    suggestion = f" Did you mean {hint[0]!r}?" if hint else ""
    raise UnknownTaskError(f"Unknown task {name!r}.{suggestion} Known tasks: {', '.join(TASKS)}.")


def make(task: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` by any task name (``db``, ``AgentBench/DB-v0``, ``dbbench-dev``).

    An upstream name selects its split unless ``split=`` is given.

    Raises:
        UnknownTaskError: If the name is unknown or the task is not implemented yet.
    """
    spec, split = resolve_task(task)
    if spec.entry_point is None:
        raise UnknownTaskError(f"Task {spec.short_name!r} ({spec.env_id}) is not implemented yet.")
    if split is not None:
        kwargs.setdefault("split", split)
    register_envs()
    return gym.make(spec.env_id, **kwargs)
