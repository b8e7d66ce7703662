"""Environment factories: how the trainer gets an environment for a task and split.

The default makes the registered AgentBench task in process (``agentrl_envs.make``) and unwraps it to the
``ToolEnv`` so its async twins are reachable. Pass ``env_factories={"name": callable}`` to the trainer to
add tasks of your own (the quickstart's calibration tasks, a RemoteEnv to a controller, test envs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["TaskEnvFactory", "make_env_factory"]

TaskEnvFactory = Callable[[str], Any]
"""``split -> env`` for one task."""


def _registered(task: str, split: str) -> Any:
    from agentrl_envs import make

    return make(task, split=split).unwrapped


def make_env_factory(overrides: Mapping[str, TaskEnvFactory] | None = None) -> Callable[[str, str], Any]:
    """A ``(task, split) -> env`` factory: ``overrides`` first, then the registered AgentBench tasks."""
    table = dict(overrides or {})

    def factory(task: str, split: str) -> Any:
        if task in table:
            return table[task](split)
        return _registered(task, split)

    return factory


def num_samples(factory: Callable[[str, str], Any], task: str, split: str) -> int:
    """How many samples ``task``/``split`` has (opens and closes one environment)."""
    env = factory(task, split)
    try:
        return int(env.num_samples())
    finally:
        env.close()
