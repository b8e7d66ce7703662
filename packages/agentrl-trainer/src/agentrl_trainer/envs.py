"""Environment factories: how the trainer gets an environment for a task and split.

The default makes the registered AgentBench task in process (``agentrl_envs.make``) and unwraps it to the
``ToolEnv`` so its async twins are reachable. Pass ``env_factories={"name": callable}`` to the trainer to
add tasks of your own (the quickstart's calibration tasks, a RemoteEnv to a controller, test envs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["TaskEnvFactory", "make_env_factory"]

TaskEnvFactory = Callable[..., Any]
"""``split -> env`` for one task; called as ``factory(split, **options)`` when the config gives it options."""


def _registered(task: str, split: str, **options: Any) -> Any:
    from agentrl_envs import make

    return make(task, split=split, **options).unwrapped


def make_env_factory(
    overrides: Mapping[str, TaskEnvFactory] | None = None,
    env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> Callable[[str, str], Any]:
    """A ``(task, split) -> env`` factory: ``overrides`` first, then the registered AgentBench tasks.

    Args:
        overrides: ``{task: split -> env}`` for tasks of your own.
        env_kwargs: ``{task: options}`` passed to the task's environment (``AgentRLConfig.env_kwargs``).
    """
    table = dict(overrides or {})
    options_by_task = {task: dict(options) for task, options in (env_kwargs or {}).items()}

    def factory(task: str, split: str) -> Any:
        options = options_by_task.get(task, {})
        if task in table:
            return table[task](split, **options)
        return _registered(task, split, **options)

    return factory


def num_samples(factory: Callable[[str, str], Any], task: str, split: str) -> int:
    """How many samples ``task``/``split`` has (opens and closes one environment)."""
    env = factory(task, split)
    try:
        return int(env.num_samples())
    finally:
        env.close()
