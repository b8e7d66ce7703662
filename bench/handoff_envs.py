"""Envs whose every call runs on a new thread that has exited before the call returns.

``bench/controller_soak.py --hand-off`` serves these, so each session's reset, steps and close run on threads
that are gone by the next call: the worst case of a thread pool that retires idle workers (anyio's, behind
Starlette), where a resource tied to the thread that created it (a parent-death signal, a thread-local
connection) would fail the episode. The controller imports them as ``handoff_envs:HandoffDB`` and so on, with
``bench/`` on its ``PYTHONPATH``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from agentrl_controller.workers.noop import NoopEnv
from agentrl_envs.tasks.db.env import DBEnv
from agentrl_envs.tasks.os.env import OSEnv

__all__ = ["HandoffDB", "HandoffNoop", "HandoffOS", "on_exited_thread"]

T = TypeVar("T")


def on_exited_thread(work: Callable[[], T]) -> T:
    """``work()`` on a new thread; returns once the thread has left the kernel too (its exit is what counts)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as e:  # re-raised on the caller's thread
            outcome["error"] = e

    thread = threading.Thread(target=run, name="handoff")
    thread.start()
    thread.join()
    while Path(f"/proc/self/task/{thread.native_id}").exists():
        threading.Event().wait(0.001)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


class _Handoff:
    """Runs ``reset``, ``step`` and ``close`` each on a thread of its own."""

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        return on_exited_thread(lambda: super(_Handoff, self).reset(*args, **kwargs))  # type: ignore[misc]

    def step(self, *args: Any, **kwargs: Any) -> Any:
        return on_exited_thread(lambda: super(_Handoff, self).step(*args, **kwargs))  # type: ignore[misc]

    def close(self) -> None:
        on_exited_thread(lambda: super(_Handoff, self).close())  # type: ignore[misc]


class HandoffNoop(_Handoff, NoopEnv):
    """The no-op task, handed between threads."""


class HandoffDB(_Handoff, DBEnv):
    """The DB task, handed between threads."""


class HandoffOS(_Handoff, OSEnv):
    """The OS task, handed between threads."""
