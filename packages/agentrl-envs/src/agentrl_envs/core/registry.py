"""The task table: its tasks, tasks of one's own, their names, env ids and Gymnasium registration.

The five AgentBench tasks, and the four BFCL multi-turn categories (held-out generalization, test split
only). Each task has a short name (``db``, ``bfcl_base``), a versioned env id (``AgentBench/DB-v0``,
``AgentBench/BFCL-Base-v0``) and controller names (upstream's ``dbbench-std`` for test,
``dbbench-env_train`` for train, ``dbbench-dev`` for dev; ``bfcl_multi_turn_base-std`` for BFCL). The table
is explicit; a task whose environment has not landed yet has no entry point and is not registered.

Tasks of one's own join the same table, so every entry point (``agentrl-eval --tasks``, the trainer's
``tasks:``, the controller's default config) takes them by name: :func:`register_task` from code, the
``agentrl_envs.tasks`` entry-point group from an installed package (``name = "package.module:EnvClass"``),
or a ``module:Class`` name given wherever a task name goes.

A misspelled name gets a "Did you mean" hint, whether it reaches :func:`make` or ``gym.make`` (see
:func:`suggest_env_id`).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from importlib import import_module, metadata
from typing import Any

import gymnasium as gym
from gymnasium.envs import registration

from agentrl_envs.core.errors import EnvError, UnknownTaskError

__all__ = [
    "ENTRY_POINT_GROUP",
    "REMOTE_ENTRY_POINT",
    "TASKS",
    "TASK_GROUPS",
    "TaskSpec",
    "create_env",
    "expand_tasks",
    "load_entry_points",
    "load_object",
    "make",
    "register_envs",
    "register_task",
    "resolve_task",
    "suggest_env_id",
    "unregister_task",
]

logger = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "agentrl_envs.tasks"
"""Installed packages add tasks here: ``[project.entry-points."agentrl_envs.tasks"] guess = "pkg.env:GuessEnv"``."""

EnvFactory = Callable[..., gym.Env]
"""An env class or a function ``(**options) -> gym.Env`` (``split``, ``data_root``... among the options)."""

REMOTE_ENTRY_POINT = "agentrl_envs.client.remote:RemoteEnv"
"""The env of a task served by a controller. Named, like every task's env, rather than imported: the client
resolves task names here, so the registry must not import it (and it is only loaded when asked for)."""

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
    entry_point: str | EnvFactory | None
    """``module:Class`` of the environment (or the class or factory itself), ``None`` while not implemented."""
    oracle: str | Callable[..., Any] | None = None
    """``module:Class`` of the task's :class:`~agentrl_envs.core.oracle.Oracle` (or the class itself)."""
    benchmark: str = "agentbench"
    """Whose data the task reads: ``agentbench`` (the AgentBench data root), ``bfcl`` (BFCL's wheel) or
    ``custom`` (a task of one's own, which finds its own data: no ``data_root`` is passed to it)."""
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
    """Register every implemented task, and those of installed packages' entry points, with Gymnasium (idempotent).

    The entry points are read on the first call (``import agentrl_envs``); :func:`load_entry_points` reads them
    again, e.g. after installing a package in a running process.
    """
    _load_entry_points_once()
    for spec in TASKS.values():
        if spec.entry_point is not None and spec.env_id not in gym.registry:
            gym.register(  # pyright: ignore[reportUnknownMemberType]  # Gymnasium leaves parts of it unannotated
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
    check = registration._check_version_exists  # pyright: ignore[reportPrivateUsage]  # the one hook there is
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
                known = ", ".join(
                    f"`{spec.env_id}`"
                    for spec in TASKS.values()
                    if spec.entry_point is not None and spec.env_id.startswith(f"{_NAMESPACE}/")
                )
                raise type(e)(f"Environment `{env_id}` doesn't exist. The {_NAMESPACE} ids are {known}.") from None
            raise

    check_with_hint._agentrl_hints = True  # pyright: ignore[reportAttributeAccessIssue]  # marks it wrapped
    registration._check_version_exists = check_with_hint  # pyright: ignore[reportPrivateUsage]


def create_env(*, task: str, controller_url: str | None = None, **kwargs: Any) -> gym.Env:
    """Entry point of the registered env ids: the task's env, or a ``RemoteEnv`` given ``controller_url``.

    Args:
        task: The task's short name.
        controller_url: A controller's API URL (``http://host:5020/api``): the episodes run there.
        **kwargs: The env's options.
    """
    if controller_url is not None:
        return load_object(REMOTE_ENTRY_POINT)(task, controller_url=controller_url, **kwargs)
    spec = TASKS[task]
    if spec.entry_point is None:
        raise UnknownTaskError(f"Task {task!r} ({spec.env_id}) is not implemented yet.")
    return load_object(spec.entry_point)(**kwargs)


create_env.metadata = {"render_modes": ["ansi"]}  # pyright: ignore[reportFunctionMemberAccess]  # read by gym.make


def resolve_task(name: str) -> tuple[TaskSpec, str | None]:
    """Find a task by short name, env id or upstream name.

    Returns:
        The task and, for upstream names, the split they denote (``None`` otherwise).

    Raises:
        UnknownTaskError: With a "Did you mean" hint.
    """
    if ":" in name and name not in TASKS:
        return _register_import_path(name), None
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
    try:
        spec, split = resolve_task(task)
    except UnknownTaskError:
        if kwargs.get("controller_url") is not None and ":" not in task:  # a name only the controller knows
            return create_env(task=task, **kwargs)
        raise
    if split is not None:
        kwargs.setdefault("split", split)
    if spec.entry_point is None:
        if kwargs.get("controller_url") is not None:  # served by a controller: no local implementation needed
            return create_env(task=spec.short_name, **kwargs)
        raise UnknownTaskError(f"Task {spec.short_name!r} ({spec.env_id}) is not implemented yet.")
    register_envs()
    return gym.make(spec.env_id, **kwargs)


def register_task(
    name: str,
    factory: str | EnvFactory,
    *,
    oracle: str | Callable[..., Any] | None = None,
    env_id: str | None = None,
) -> TaskSpec:
    """Add a task of one's own to the task table (and to Gymnasium), so every tool takes it by ``name``.

    Args:
        name: The short name (``--tasks name``, ``tasks: [name]``, result keys); a controller serves it as
            ``name-std``/``name-dev``/``name-env_train`` with ``name`` for the test split.
        factory: A :class:`~agentrl_envs.core.env.ToolEnv` subclass, a function ``(**options) -> env``, or
            ``"module:attr"`` naming one (imported on first use).
        oracle: Its :class:`~agentrl_envs.core.oracle.Oracle` (class or ``"module:Class"``), for ``--agent oracle``.
        env_id: The Gymnasium id; default ``AgentRL/<name>-v0``.

    Returns:
        The task's spec.

    Raises:
        EnvError: If ``name`` is not a plain name or is taken by another task.
    """
    if not name or any(c in name for c in ":/ ,"):
        raise EnvError(f"Task name {name!r} must be a plain name without ':', '/', ',' or spaces (e.g. 'guess').")
    spec = TaskSpec(name, env_id or f"AgentRL/{name}-v0", name, name, factory, oracle, benchmark="custom")
    held = TASKS.get(name)
    if held is not None:
        if not _same_object(held.entry_point, factory) or (
            oracle is not None and held.oracle is not None and not _same_object(held.oracle, oracle)
        ):
            raise EnvError(
                f"Task {name!r} is already registered (entry point {held.entry_point!r}); choose another name."
            )
        if oracle is None or held.oracle is not None:
            return held
        spec = dataclasses.replace(held, oracle=oracle)  # an entry point's task, now imported with its oracle
    TASKS[name] = spec
    if spec.env_id not in gym.registry:
        gym.register(  # pyright: ignore[reportUnknownMemberType]  # Gymnasium leaves parts of it unannotated
            id=spec.env_id, entry_point=create_env, kwargs={"task": name}, disable_env_checker=False
        )
    return spec


def unregister_task(name: str) -> None:
    """Remove a task :func:`register_task` added (tests, notebooks); the AgentBench tasks stay."""
    spec = TASKS.get(name)
    if spec is None or spec.env_id.startswith("AgentBench/"):
        return
    del TASKS[name]
    gym.registry.pop(spec.env_id, None)


def load_object(path: str | Callable[..., Any]) -> Callable[..., Any]:
    """The object a ``module:attr`` names (or ``path`` itself if it is one already).

    Raises:
        UnknownTaskError: If the module or attribute cannot be imported.
    """
    if not isinstance(path, str):
        return path
    module, _, attr = path.partition(":")
    try:
        return getattr(import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise UnknownTaskError(
            f"Cannot import {path!r}: {type(e).__name__}: {e}. Give an importable 'package.module:ClassName' "
            "(is its directory on PYTHONPATH, or its package installed?)."
        ) from e


def _same_object(a: str | Callable[..., Any] | None, b: str | Callable[..., Any] | None) -> bool:
    if a is None or b is None:
        return a is b
    try:
        return load_object(a) is load_object(b)
    except UnknownTaskError:
        return a == b


def _register_import_path(path: str) -> TaskSpec:
    """The task of a ``module:Class`` name, registered under the class's ``task`` name (else the attribute's)."""
    obj = load_object(path)
    declared = getattr(obj, "task", None)
    name = declared if isinstance(declared, str) and declared else path.partition(":")[2]
    held = TASKS.get(name)
    if held is not None and held.entry_point is not None and _same_object(held.entry_point, obj):
        return held
    if held is not None:
        raise EnvError(
            f"{path!r} declares task {name!r}, which is already registered to {held.entry_point!r}; rename its "
            "task attribute or register it under another name with agentrl_envs.register_task."
        )
    return register_task(name, path)


@functools.cache
def _load_entry_points_once() -> None:
    load_entry_points()


def load_entry_points() -> None:
    """Register the tasks installed packages declare in the ``agentrl_envs.tasks`` group (imported on first use)."""
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in TASKS:
            continue
        try:
            register_task(entry.name, entry.value)
        except EnvError as e:  # one broken plugin must not stop the others (or ``import agentrl_envs``)
            logger.warning("entry point %s = %s of %s skipped: %s", entry.name, entry.value, ENTRY_POINT_GROUP, e)
