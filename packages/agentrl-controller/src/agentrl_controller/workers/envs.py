"""Building the environments a local worker serves, from a task's ``env`` name and options."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

from agentrl_envs.core.env import ToolEnv
from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.registry import make

__all__ = ["env_factory"]


def env_factory(env: str, *, split: str | None, options: dict[str, Any]) -> Callable[[], ToolEnv]:
    """A function that builds one fresh, unwrapped env for the task.

    Args:
        env: A registered task name (``db``, ``dbbench-dev``, ``AgentBench/DB-v0``) or ``module:Class``.
        split: The split, or ``None`` for the env's (or the upstream name's) default.
        options: Keyword options for the env.

    Raises:
        EnvError: If ``env`` names nothing importable or registered.
    """
    kwargs = dict(options)
    if split is not None:
        kwargs["split"] = split
    if ":" in env:
        cls = _import_class(env)
        return lambda: cls(**kwargs)
    return lambda: _unwrap(make(env, **kwargs))


def _import_class(path: str) -> type[ToolEnv]:
    module_name, _, class_name = path.partition(":")
    try:
        cls = getattr(import_module(module_name), class_name)
    except (ImportError, AttributeError) as e:
        raise EnvError(f"Cannot import env class {path!r}: {e}. Give env as 'package.module:ClassName'.") from e
    if not (isinstance(cls, type) and issubclass(cls, ToolEnv)):
        raise EnvError(f"{path!r} is not a ToolEnv subclass.")
    return cls


def _unwrap(env: Any) -> ToolEnv:
    inner = env.unwrapped
    if not isinstance(inner, ToolEnv):
        raise EnvError(f"{type(inner).__name__} is not a ToolEnv; the controller serves ToolEnv tasks only.")
    return inner
