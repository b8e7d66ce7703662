"""The environment interface the trainer, the controller's workers and the eval runner drive.

Both :class:`~agentrl_envs.core.ToolEnv` (in process) and :class:`~agentrl_envs.client.RemoteEnv` (through a
controller) satisfy it, as does any env of one's own that has these methods; code that plays episodes takes an
:class:`AsyncToolEnv` rather than a concrete class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from agentrl_envs.core.messages import Message

__all__ = ["AsyncToolEnv", "EnvFactory"]


@runtime_checkable
class AsyncToolEnv(Protocol):
    """A tool-use environment with Gymnasium's ``reset``/``step``, their async twins and its sample count.

    ``areset``/``astep`` are what a high-concurrency caller awaits (a rollout producer, the controller's worker);
    ``reset``/``step`` serve one-off synchronous uses (probing a task's first prompt, playing an oracle).
    """

    def num_samples(self) -> int:
        """How many samples the env's split has (indices ``0..n-1``)."""
        ...

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """Start the sample ``options["index"]``: the first messages and the ``info`` (with ``tools``)."""
        ...

    def step(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Play one assistant message: ``(new_messages, reward, terminated, truncated, info)``."""
        ...

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """:meth:`reset` for an event loop."""
        ...

    async def astep(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """:meth:`step` for an event loop."""
        ...

    def close(self) -> None:
        """End any running episode and release the env's resources."""
        ...


EnvFactory = Callable[[str, str], AsyncToolEnv]
"""``(task, split) -> env``: how the trainer and the trainer's evaluation open an environment of a task."""
