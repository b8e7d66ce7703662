"""The live workers, by task: registration, heartbeats, expiry, and the choice of a worker for a session."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from agentrl_controller.workers.client import WorkerClient

__all__ = ["Worker", "WorkerPool"]

logger = logging.getLogger(__name__)

WorkerKind = Literal["local", "remote"]


@dataclass(eq=False)
class Worker:
    """One worker serving one task name; ``active`` counts the slots sessions hold on it."""

    worker_id: str
    task: str
    address: str
    kind: WorkerKind
    concurrency: int
    client: WorkerClient
    indices: list[int | str] = field(default_factory=list)
    active: int = 0
    healthy: bool = True
    pid: int | None = None
    restarts: int = 0
    last_seen: float = field(default_factory=time.monotonic)
    sandbox_pool: dict[str, dict[str, int]] = field(default_factory=dict)
    """The worker's sandbox pool counters by image (``worker_status``), refreshed by the controller's upkeep."""

    @property
    def free(self) -> int:
        """Slots left."""
        return self.concurrency - self.active


class WorkerPool:
    """Workers by id and by task name."""

    def __init__(self) -> None:
        """Start empty; ``on_lost`` listeners hear about every worker that goes away."""
        self.workers: dict[str, Worker] = {}
        self._by_task: dict[str, list[Worker]] = {}
        self._ids = itertools.count(1)
        self.on_added: list[Callable[[Worker], None]] = []
        self.on_lost: list[Callable[[Worker, str], None]] = []

    def new_id(self, kind: WorkerKind) -> str:
        """A fresh worker id."""
        return f"{kind}-{next(self._ids)}"

    def add(self, worker: Worker) -> None:
        """Make a worker available for new sessions."""
        self.workers[worker.worker_id] = worker
        self._by_task.setdefault(worker.task, []).append(worker)
        logger.info("worker %s up for task %s at %s", worker.worker_id, worker.task, worker.address)
        for listener in self.on_added:
            listener(worker)

    def remove(self, worker: Worker, reason: str) -> None:
        """Take a worker away; its sessions are ended by the ``on_lost`` listeners."""
        if self.workers.pop(worker.worker_id, None) is None:
            return
        worker.healthy = False
        workers = self._by_task.get(worker.task, [])
        if worker in workers:
            workers.remove(worker)
        logger.warning("worker %s of task %s lost: %s", worker.worker_id, worker.task, reason)
        for listener in self.on_lost:
            listener(worker, reason)

    def for_task(self, task: str) -> list[Worker]:
        """The live workers of a task."""
        return self._by_task.get(task, [])

    def tasks(self) -> list[str]:
        """Task names that have at least one live worker."""
        return [task for task, workers in self._by_task.items() if workers]

    def pick(self, task: str) -> Worker | None:
        """The healthy worker of ``task`` with the most free slots, or ``None`` if all are full."""
        best = None
        for worker in self._by_task.get(task, ()):
            if worker.healthy and worker.free > 0 and (best is None or worker.free > best.free):
                best = worker
        return best

    def find_remote(self, task: str, address: str) -> Worker | None:
        """The registered remote worker of ``task`` at ``address``."""
        for worker in self._by_task.get(task, ()):
            if worker.kind == "remote" and worker.address == address:
                return worker
        return None

    def expire(self, timeout_s: float) -> list[Worker]:
        """Drop remote workers whose last heartbeat is older than ``timeout_s``."""
        now = time.monotonic()
        stale = [w for w in self.workers.values() if w.kind == "remote" and now - w.last_seen > timeout_s]
        for worker in stale:
            self.remove(worker, f"no heartbeat for {now - worker.last_seen:.0f} s")
        return stale
