"""Local worker processes: spawned per configured task, watched, restarted on crash, drained on shutdown.

Each process serves one task on a Unix socket in the controller's run directory. A process that exits
takes its worker out of the pool (its sessions end as ``task error`` with ``infra_error``) and is started
again after a backoff that doubles up to a cap. Its stdout/stderr go to a log file whose tail explains a
failed start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentrl_controller.config import TaskConfig, WorkerConfig
from agentrl_controller.errors import TaskUnavailableError, WorkerError
from agentrl_controller.workers.client import WorkerClient
from agentrl_controller.workers.logs import log_tail
from agentrl_controller.workers.pool import Worker, WorkerPool
from agentrl_controller.workers.sandboxes import Broker, uses_broker

__all__ = ["Supervisor"]

logger = logging.getLogger(__name__)

_MAX_FAILED_STARTS = 3


@dataclass(eq=False)
class _Slot:
    """One supervised process of a task (``number`` of ``task.workers``)."""

    task: TaskConfig
    number: int
    process: asyncio.subprocess.Process | None = None
    worker: Worker | None = None
    restarts: int = 0
    failed_starts: int = 0
    last_error: str | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    failing: bool = False
    """Whether the latest start attempt failed."""
    runner: asyncio.Task[None] | None = None


class Supervisor:
    """Runs the local workers of every configured task."""

    def __init__(self, tasks: list[TaskConfig], settings: WorkerConfig, pool: WorkerPool, run_dir: Path) -> None:
        """Prepare (nothing starts until :meth:`ensure` or :meth:`start_eager`)."""
        self.tasks = {task.name: task for task in tasks}
        self.settings = settings
        self.pool = pool
        self.run_dir = run_dir
        self._slots: dict[str, list[_Slot]] = {}
        self._brokers: dict[str, Broker] = {}
        """The sandbox broker of each task whose workers share one pool (started before them, stopped after)."""
        self._stopping = False
        self._lock = asyncio.Lock()

    async def start_eager(self) -> None:
        """Start the tasks configured with ``lazy: false``."""
        await asyncio.gather(*(self.ensure(name) for name, task in self.tasks.items() if not task.lazy))

    async def ensure(self, name: str) -> None:
        """Start the task's processes if they are not running, and wait until at least one is ready.

        Raises:
            TaskUnavailableError: If no process of the task became ready; the message has its log's tail.
        """
        task = self.tasks[name]
        async with self._lock:
            slots = self._slots.get(name)
            if slots is None or all(s.runner is None or s.runner.done() for s in slots):
                await self._ensure_broker(task)
                slots = [_Slot(task, n) for n in range(task.workers)]
                self._slots[name] = slots
                for slot in slots:
                    slot.runner = asyncio.create_task(self._run(slot), name=f"worker-{name}-{slot.number}")
        if any(s.ready.is_set() for s in slots):
            return
        # Wait for one process to be ready, unless every one is failing to start (a broken task fails fast).
        deadline = time.monotonic() + 2 * self.settings.start_timeout_s
        while not any(s.ready.is_set() for s in slots) and time.monotonic() < deadline:
            if all(s.failing or (s.runner is not None and s.runner.done()) for s in slots):
                break
            await asyncio.sleep(0.05)
        if not any(s.ready.is_set() for s in slots):
            errors = "; ".join(s.last_error or "did not start" for s in slots)
            raise TaskUnavailableError(f"Workers for task {name!r} could not be started: {errors}")

    async def _ensure_broker(self, task: TaskConfig) -> None:
        """Start the task's sandbox broker if its workers share one pool.

        Raises:
            TaskUnavailableError: If the broker did not come up; the message has its log's tail.
        """
        if not uses_broker(task) or task.name in self._brokers:
            return
        index = list(self.tasks).index(task.name)
        broker = Broker(task, self.run_dir / f"b{index}.sock", self.run_dir / f"b{index}.log")
        try:
            await broker.start()
        except WorkerError as e:
            await broker.stop(0)
            raise TaskUnavailableError(f"The sandbox broker of task {task.name!r} could not be started: {e}") from e
        self._brokers[task.name] = broker

    def broker_pid(self, name: str) -> int | None:
        """The pid of task ``name``'s sandbox broker, if it has one running and answering."""
        broker = self._brokers.get(name)
        return broker.pid if broker is not None else None

    async def _run(self, slot: _Slot) -> None:
        backoff = self.settings.restart_backoff_s
        while not self._stopping:
            started_at = time.monotonic()
            try:
                await self._spawn(slot)
            except WorkerError as e:
                slot.last_error = str(e)
                slot.failed_starts += 1
                slot.failing = True
                logger.error("worker %s/%s failed to start: %s", slot.task.name, slot.number, e)
                if slot.failed_starts >= _MAX_FAILED_STARTS:
                    return  # a broken task; the next request for it tries again
            else:
                slot.failed_starts = 0
                slot.failing = False
                await self._watch(slot)
            if self._stopping:
                return
            if time.monotonic() - started_at > 60:
                backoff = self.settings.restart_backoff_s
            slot.restarts += 1
            await asyncio.sleep(backoff)
            backoff = min(max(backoff * 2, 0.1), self.settings.restart_backoff_max_s)

    async def _spawn(self, slot: _Slot) -> None:
        name = slot.task.name
        index = list(self.tasks).index(name)
        uds = str(self.run_dir / f"w{index}-{slot.number}.sock")
        log_path = self.run_dir / f"w{index}-{slot.number}.log"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(uds)
        broker = self._brokers.get(name)
        broker_args = ["--sandbox-broker", str(broker.path)] if broker is not None else []
        with log_path.open("ab") as log:
            slot.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "agentrl_controller.workers.local",
                "--task",
                slot.task.model_dump_json(),
                "--uds",
                uds,
                *broker_args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # a Ctrl-C at the terminal reaches the controller, which drains workers
            )
        client = WorkerClient(
            f"http://{name}/api",
            uds=uds,
            max_connections=min(slot.task.concurrency, 1024),
            read_timeout_s=self.settings.request_timeout_s,
        )
        try:
            indices = await self._wait_ready(slot.process, client, log_path)
        except WorkerError:
            await client.aclose()
            await self._kill(slot.process)
            raise
        slot.worker = Worker(
            worker_id=self.pool.new_id("local"),
            task=name,
            address=f"unix:{uds}",
            kind="local",
            concurrency=slot.task.concurrency,
            client=client,
            indices=indices,
            pid=slot.process.pid,
            restarts=slot.restarts,
        )
        self.pool.add(slot.worker)
        slot.ready.set()

    async def _wait_ready(
        self, process: asyncio.subprocess.Process, client: WorkerClient, log_path: Path
    ) -> list[int | str]:
        deadline = time.monotonic() + self.settings.start_timeout_s
        while time.monotonic() < deadline:
            if process.returncode is not None:
                raise WorkerError(f"exited with code {process.returncode}: {log_tail(log_path)}")
            try:
                # bounded too: a worker that accepts the connection but never answers must not hang the start
                return await asyncio.wait_for(client.get_indices(), max(deadline - time.monotonic(), 0.1))
            except (WorkerError, TimeoutError):
                await asyncio.sleep(0.05)
        raise WorkerError(f"not ready after {self.settings.start_timeout_s:g} s: {log_tail(log_path)}")

    async def _watch(self, slot: _Slot) -> None:
        assert slot.process is not None and slot.worker is not None
        code = await slot.process.wait()
        slot.ready.clear()
        reason = f"process {slot.process.pid} exited with code {code}"
        if not self._stopping:
            logger.error("worker %s of task %s: %s; restarting", slot.worker.worker_id, slot.task.name, reason)
        self.pool.remove(slot.worker, reason)
        await slot.worker.client.aclose()

    async def stop(self) -> None:
        """Drain: ask every process to stop (SIGTERM), wait ``drain_timeout_s``, then kill what is left."""
        self._stopping = True
        slots = [slot for slots in self._slots.values() for slot in slots]
        processes = [s.process for s in slots if s.process is not None and s.process.returncode is None]
        for process in processes:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
        if processes:
            _, pending = await asyncio.wait(
                [asyncio.create_task(p.wait()) for p in processes], timeout=self.settings.drain_timeout_s
            )
            for process in processes:
                if process.returncode is None:
                    await self._kill(process)
        for slot in slots:
            if slot.runner is not None:
                slot.runner.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await slot.runner
        # after the workers: their envs give their sandboxes back first; the broker then closes every sandbox
        await asyncio.gather(*(broker.stop(self.settings.drain_timeout_s) for broker in self._brokers.values()))

    def processes(self) -> list[tuple[str, int | None, int]]:
        """``(task, pid, restarts)`` of every supervised process."""
        return [
            (s.task.name, s.process.pid if s.process else None, s.restarts)
            for slots in self._slots.values()
            for s in slots
        ]

    @staticmethod
    async def _kill(process: asyncio.subprocess.Process) -> None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
