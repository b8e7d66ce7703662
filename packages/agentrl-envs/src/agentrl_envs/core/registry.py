"""The tasks: their names, env ids and Gymnasium registration.

The five AgentBench tasks, and the four BFCL multi-turn categories (held-out generalization, test split
only). Each task has a short name (``db``, ``bfcl_base``), a versioned env id (``AgentBench/DB-v0``,
``AgentBench/BFCL-Base-v0``) and controller names (upstream's ``dbbench-std`` for test,
``dbbench-env_train`` for train, ``dbbench-dev`` for dev; ``bfcl_multi_turn_base-std`` for BFCL). The table
is explicit; a task whose environment has not landed yet has no entry point and is not registered.

A misspelled name gets a "Did you mean" hint, whether it reaches :func:`make` or ``gym.make`` (see
:func:`suggest_env_id`).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import import_module
from typing import Any

import gymnasium as gym
from gymnasium.envs import registration

from agentrl_envs.core.errors import UnknownTaskError

__all__ = [
    "TASKS",
    "TASK_GROUPS",
    "TaskSpec",
    "create_env",
    "expand_tasks",
    "make",
    "register_envs",
    "resolve_task",
    "suggest_env_id",
]

_SPLIT_SUFFIX = {"test": "std", "train": "env_train", "dev": "dev"}
_NAMESPACE = "AgentBench"


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
    benchmark: str = "agentbench"
    """Whose data the task reads: ``agentbench`` (the AgentBench data root) or ``bfcl`` (BFCL's wheel)."""
    splits: tuple[str, ...] = ("test", "dev", "train")
    """The splits the task has."""

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
        *(
            TaskSpec(
                short_name,
                env_id,
                f"bfcl_{category}",
                f"bfcl_{category}",
                f"agentrl_envs.tasks.bfcl.env:{name}Env",
                f"agentrl_envs.tasks.bfcl.oracle:{name}Oracle",
                benchmark="bfcl",
                splits=("test",),
            )
            for short_name, env_id, category, name in (
                ("bfcl_base", "AgentBench/BFCL-Base-v0", "multi_turn_base", "BFCLBase"),
                ("bfcl_miss_func", "AgentBench/BFCL-MissFunc-v0", "multi_turn_miss_func", "BFCLMissFunc"),
                ("bfcl_miss_param", "AgentBench/BFCL-MissParam-v0", "multi_turn_miss_param", "BFCLMissParam"),
                ("bfcl_long_context", "AgentBench/BFCL-LongContext-v0", "multi_turn_long_context", "BFCLLongContext"),
            )
        ),
    )
}

TASK_GROUPS: dict[str, tuple[str, ...]] = {
    "bfcl": ("bfcl_base", "bfcl_miss_func", "bfcl_miss_param", "bfcl_long_context"),
}
"""Names that stand for several tasks in ``--tasks`` lists: ``bfcl`` is BFCL's four multi-turn categories."""


def register_envs() -> None:
    """Register every implemented task with Gymnasium (idempotent)."""
    for spec in TASKS.values():
        if spec.entry_point is not None and spec.env_id not in gym.registry:
            gym.register(
                id=spec.env_id, entry_point=create_env, kwargs={"task": spec.short_name}, disable_env_checker=False
            )
    _hint_misspelled_ids()


def suggest_env_id(env_id: str) -> str | None:
    """The registered ``AgentBench/...`` id that a wrong ``env_id`` most likely meant, or ``None``.

    In the namespace (spelled in any case) the name is matched loosely, ignoring case and version, against the
    env names, short names and upstream keys (``AgentBench/Db-v0``, ``AgentBench/DB-v1``, ``AgentBench/dbbench``
    all give ``AgentBench/DB-v0``). Without a namespace only an exact task name counts (``db``, ``DB-v0``,
    ``dbbench-std``), since such ids are usually Gymnasium's own envs.
    """
    namespace, _, rest = env_id.rpartition("/")
    if namespace and namespace.lower() != _NAMESPACE.lower():
        return None
    name = re.sub(r"-v[^-]*$", "", rest)  # the version, even a malformed one
    names: dict[str, str] = {}
    for spec in TASKS.values():
        if spec.entry_point is None:
            continue
        env_name = spec.env_id.partition("/")[2].rsplit("-v", 1)[0]
        upstream = [spec.upstream_name(split) for split in spec.splits]
        for alias in (env_name, spec.short_name, spec.upstream_key, *upstream):
            names.setdefault(alias, spec.env_id)
    if not namespace:
        exact = {alias.lower(): target for alias, target in names.items()}
        return exact.get(name.lower()) or exact.get(rest.lower())
    hint = _closest(name, names)
    return names[hint] if hint is not None else None


def _closest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name`` by difflib, ignoring case (so ``Db`` finds ``DB``), or ``None``."""
    by_lower = {candidate.lower(): candidate for candidate in candidates}
    hint = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
    return by_lower[hint[0]] if hint else None


def _hint_misspelled_ids() -> None:
    """Make ``gym.make`` and ``gym.spec`` name the AgentBench id that a wrong one most likely meant.

    Gymnasium hints only at a name that is close with the same case (``DBB`` gets ``DB``; ``Db`` gets nothing,
    ``DB-v1`` a list of versions), and it has no hook for a namespace's own hints; so its id check, the one
    function both call for an id that is not registered, is wrapped once. Errors keep their Gymnasium type
    (``NameNotFound``, ``VersionNotFound``...); ids outside the namespace that suggest nothing keep Gymnasium's
    message.
    """
    check = registration._check_version_exists
    if getattr(check, "_agentrl_hints", False):
        return

    @functools.wraps(check)
    def check_with_hint(ns: str | None, name: str, version: int | None) -> None:
        try:
            check(ns, name, version)
        except gym.error.Error as e:
            env_id = registration.get_env_id(ns, name, version)
            hint = suggest_env_id(env_id)
            if hint is not None:
                raise type(e)(f"Environment `{env_id}` doesn't exist. Did you mean: `{hint}`?") from None
            if ns is not None and ns.lower() == _NAMESPACE.lower():
                known = ", ".join(f"`{spec.env_id}`" for spec in TASKS.values() if spec.entry_point is not None)
                raise type(e)(f"Environment `{env_id}` doesn't exist. The {_NAMESPACE} ids are {known}.") from None
            raise

    check_with_hint._agentrl_hints = True  # type: ignore[attr-defined]
    registration._check_version_exists = check_with_hint


def create_env(*, task: str, controller_url: str | None = None, **kwargs: Any) -> gym.Env:
    """Entry point of the registered env ids: the task's env, or a ``RemoteEnv`` given ``controller_url``.

    Args:
        task: The task's short name.
        controller_url: A controller's API URL (``http://host:5020/api``): the episodes run there.
        **kwargs: The env's options.
    """
    spec = TASKS[task]
    if controller_url is not None:
        from agentrl_envs.client.remote import RemoteEnv  # the client is only loaded when asked for

        return RemoteEnv(task, controller_url=controller_url, **kwargs)
    if spec.entry_point is None:
        raise UnknownTaskError(f"Task {task!r} ({spec.env_id}) is not implemented yet.")
    module, _, name = spec.entry_point.partition(":")
    return getattr(import_module(module), name)(**kwargs)


create_env.metadata = {"render_modes": ["ansi"]}  # type: ignore[attr-defined]  # read by gym.make


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
        for split in spec.splits:
            known[spec.upstream_name(split)] = (spec, split)
    if name in known:
        return known[name]
    hint = _closest(name, known)
    suggestion = f" Did you mean {hint!r}?" if hint else ""
    raise UnknownTaskError(f"Unknown task {name!r}.{suggestion} Known tasks: {', '.join(TASKS)}.")


def expand_tasks(names: str) -> list[str]:
    """A comma-separated task list with groups (``bfcl``) replaced by their tasks, e.g. ``db,bfcl``."""
    expanded: list[str] = []
    for name in [n.strip() for n in names.split(",") if n.strip()]:
        expanded += TASK_GROUPS.get(name, (name,))
    return expanded


def make(task: str, **kwargs: Any) -> gym.Env:
    """``gym.make`` by any task name (``db``, ``AgentBench/DB-v0``, ``dbbench-dev``).

    An upstream name selects its split unless ``split=`` is given.

    Raises:
        UnknownTaskError: If the name is unknown or the task is not implemented yet.
    """
    spec, split = resolve_task(task)
    if split is not None:
        kwargs.setdefault("split", split)
    if spec.entry_point is None:
        if kwargs.get("controller_url") is not None:  # served by a controller: no local implementation needed
            return create_env(task=spec.short_name, **kwargs)
        raise UnknownTaskError(f"Task {spec.short_name!r} ({spec.env_id}) is not implemented yet.")
    register_envs()
    return gym.make(spec.env_id, **kwargs)
