"""The admission queue: a bounded FIFO per task that waits for a free worker slot, with a timeout.

Bursts beyond the workers' capacity wait here instead of being refused (upstream's eval client does not
retry a refused ``start_sample``). A freed slot goes straight to the oldest waiter, so no waiter starves.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from agentrl_controller.errors import OverloadedError
from agentrl_controller.workers.pool import Worker, WorkerPool

__all__ = ["AdmissionQueue"]


class AdmissionQueue:
    """Hands out worker slots: at once when one is free, else in arrival order."""

    def __init__(self, pool: WorkerPool, *, max_waiting: int, timeout_s: float) -> None:
        """Bind to a worker pool.

        Args:
            pool: Where free slots are looked for.
            max_waiting: Waiters allowed per task; one more is refused with 429.
            timeout_s: How long a waiter waits before it is refused with 429.
        """
        self.pool = pool
        self.max_waiting = max_waiting
        self.timeout_s = timeout_s
        self._waiters: dict[str, deque[asyncio.Future[Worker]]] = {}
        pool.on_added.append(lambda worker: self.dispatch(worker.task))

    def waiting(self, task: str | None = None) -> int:
        """Requests waiting (for one task, or in all)."""
        if task is not None:
            return len(self._waiters.get(task, ()))
        return sum(len(q) for q in self._waiters.values())

    async def acquire(self, task: str) -> Worker:
        """Reserve a slot on the least busy worker of ``task``.

        Raises:
            OverloadedError: If the queue is full or the wait exceeds the timeout.
        """
        waiters = self._waiters.setdefault(task, deque())
        if not waiters:
            worker = self.pool.pick(task)
            if worker is not None:
                worker.active += 1
                return worker
        if len(waiters) >= self.max_waiting:
            raise OverloadedError(
                f"Task {task!r} is at capacity and {len(waiters)} requests are already waiting "
                f"(admission.max_waiting); retry later or add workers."
            )
        future: asyncio.Future[Worker] = asyncio.get_running_loop().create_future()
        waiters.append(future)
        try:
            await asyncio.wait({future}, timeout=self.timeout_s)
        except asyncio.CancelledError:  # the client went away: give back a slot it may just have got
            if future.done() and not future.cancelled():
                self.release(future.result())
            else:
                self._forget(waiters, future)
            raise
        if not future.done():
            self._forget(waiters, future)
            raise OverloadedError(
                f"No worker slot for task {task!r} within {self.timeout_s:g} s (admission.timeout_s); "
                "retry later or add workers."
            )
        return future.result()

    @staticmethod
    def _forget(waiters: deque[asyncio.Future[Worker]], future: asyncio.Future[Worker]) -> None:
        future.cancel()
        with contextlib.suppress(ValueError):
            waiters.remove(future)

    def release(self, worker: Worker) -> None:
        """Give a slot back and pass it on to the oldest waiter."""
        worker.active = max(0, worker.active - 1)
        self.dispatch(worker.task)

    def dispatch(self, task: str) -> None:
        """Serve waiters of ``task`` while free slots last."""
        waiters = self._waiters.get(task)
        while waiters:
            worker = self.pool.pick(task)
            if worker is None:
                return
            future = waiters.popleft()
            if future.done():
                continue
            worker.active += 1
            future.set_result(worker)
