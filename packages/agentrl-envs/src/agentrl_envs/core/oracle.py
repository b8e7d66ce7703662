"""Oracle solvers: agents that play a sample's gold solution through the environment.

An oracle reads the gold data from the data root itself (not from the environment), so it can drive a
local env or a remote one behind a controller alike. Every task ships one; it is how fidelity is tested.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import UnknownTaskError
from agentrl_envs.core.messages import Message

__all__ = ["Oracle", "load_oracle"]


class Oracle(ABC):
    """Plays the gold solution of one sample at a time."""

    def __init__(self, *, split: str = "test", data_root: str | None = None, **options: Any) -> None:
        """Load what the oracle needs for ``split``.

        Args:
            split: The split whose samples will be played.
            data_root: The AgentBench data root (see :class:`DataRoot`).
            **options: Task-specific options (the same ones the env takes, e.g. a train file path).
        """
        self.split = split
        self._data_root = data_root
        self._data: DataRoot | None = None
        self.options = options

    def _find_data(self, data_root: str | None) -> DataRoot:
        """The task's data: the AgentBench data root (a task built on other data overrides this)."""
        return DataRoot.find(data_root)

    @property
    def data(self) -> DataRoot:
        """The data root, resolved on first use (an oracle of one's own task may need none)."""
        if self._data is None:
            self._data = self._find_data(self._data_root)
        return self._data

    @abstractmethod
    def begin(self, index: int) -> None:
        """Prepare to play sample ``index``."""

    @abstractmethod
    def act(self, observation: list[Message]) -> Message:
        """The next assistant message, given the messages the environment just returned."""


def load_oracle(task: str, *, split: str = "test", data_root: str | None = None, **options: Any) -> Oracle:
    """Instantiate the oracle of a task (short name, env id or upstream name)."""
    from agentrl_envs.core.registry import load_object, resolve_task

    spec, _ = resolve_task(task)
    if spec.oracle is None:
        raise UnknownTaskError(f"Task {spec.short_name!r} has no oracle yet.")
    return load_object(spec.oracle)(split=split, data_root=data_root, **options)
