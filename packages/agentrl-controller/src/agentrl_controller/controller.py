"""The controller: task names, workers (local and remote), sessions and their background upkeep, in one object.

The HTTP layer (:mod:`agentrl_controller.api`) is a thin shell over :class:`Controller`; tests and the
benchmark can drive it in-process.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from typing import Any, cast

import httpx

from agentrl_controller.config import ControllerConfig
from agentrl_controller.errors import BadRequestError, NotFoundError
from agentrl_controller.http.models import HeartbeatRequest, SessionInfo, WorkerInfo
from agentrl_controller.metrics import ControllerMetrics
from agentrl_controller.rundir import make_run_dir, sweep_run_dirs
from agentrl_controller.sessions.admission import AdmissionQueue
from agentrl_controller.sessions.manager import SessionManager
from agentrl_controller.workers.client import WorkerClient
from agentrl_controller.workers.pool import Worker, WorkerPool
from agentrl_controller.workers.sandboxes import sweep_orphans, uses_broker
from agentrl_controller.workers.supervisor import Supervisor
from agentrl_envs.core.errors import UnknownTaskError
from agentrl_envs.core.registry import resolve_task

__all__ = ["Controller"]

logger = logging.getLogger(__name__)


class Controller:
    """Everything behind the API."""

    def __init__(self, config: ControllerConfig) -> None:
        """Build the parts; nothing runs until :meth:`start`."""
        self.config = config
        self.metrics = ControllerMetrics()
        self.pool = WorkerPool()
        self.admission = AdmissionQueue(
            self.pool, max_waiting=config.admission.max_waiting, timeout_s=config.admission.timeout_s
        )
        self.sessions = SessionManager(self.pool, self.admission, self.metrics, memory=config.sessions.finished_memory)
        self.run_dir = make_run_dir()
        self.supervisor = Supervisor(config.tasks, config.workers, self.pool, self.run_dir)
        self.started_at = time.monotonic()
        self._names = {name: task.name for task in config.tasks for name in (task.name, *task.aliases)}
        self._upkeep: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Sweep what killed controllers left (run directories, sandboxes), then start eager workers and upkeep."""
        await asyncio.to_thread(sweep_run_dirs)
        if self.config.sweep_sandboxes:
            await asyncio.to_thread(sweep_orphans, self.config)
        self._upkeep = asyncio.create_task(self._upkeep_loop(), name="controller-upkeep")
        await self.supervisor.start_eager()

    async def stop(self) -> None:
        """Cancel every session, drain the workers, remove the run directory."""
        if self._upkeep is not None:
            self._upkeep.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._upkeep
        await self.sessions.cancel_all()
        await self.supervisor.stop()
        for worker in list(self.pool.workers.values()):
            if worker.kind == "remote":
                await worker.client.aclose()
        shutil.rmtree(self.run_dir, ignore_errors=True)

    # ------------------------------------------------------------------ task names

    def resolve(self, name: str) -> str:
        """The task a client's name denotes.

        That is a configured name or alias, a remote worker's name, or an upstream/short name of a configured task.

        Raises:
            NotFoundError: If nothing serves ``name``; the message lists what does.
        """
        if name in self._names:
            return self._names[name]
        if self.pool.for_task(name):
            return name
        with contextlib.suppress(UnknownTaskError):
            if ":" in name:  # a module:Class name would import code a client chose; only configs may name one
                raise UnknownTaskError(name)
            spec, split = resolve_task(name)
            upstream = spec.upstream_name(split or "test")
            if upstream in self._names:
                return self._names[upstream]
        known = sorted({*self._names, *self.pool.tasks()})
        raise NotFoundError(f"Unknown task {name!r}. This controller serves: {', '.join(known) or 'nothing'}.")

    async def _ready(self, task: str) -> None:
        if task in self.supervisor.tasks:
            await self.supervisor.ensure(task)

    async def get_indices(self, name: str) -> list[int | str]:
        """The sample indices of a task (starting its workers if needed)."""
        task = self.resolve(name)
        await self._ready(task)
        workers = self.pool.for_task(task)
        if not workers:
            raise NotFoundError(f"Task {name!r} has no live worker.")
        return max((w.indices for w in workers), key=len)

    async def start_sample(self, name: str, index: int | str, custom_task: dict[str, Any] | None) -> dict[str, Any]:
        """Start a session; see :meth:`SessionManager.start`."""
        task = self.resolve(name)
        if isinstance(index, bool):
            raise BadRequestError("index must be an int or a string, not a boolean.")
        await self._ready(task)
        self.metrics.queue_depth.set(self.admission.waiting() + 1)
        try:
            return await self.sessions.start(task, index, custom_task)
        finally:
            self.metrics.queue_depth.set(self.admission.waiting())

    # ------------------------------------------------------------------ remote workers

    def heartbeat(self, beat: HeartbeatRequest) -> str:
        """Register or refresh a remote worker; returns its worker id."""
        if not self.config.accept_remote_workers:
            raise BadRequestError("This controller does not accept remote workers (accept_remote_workers: false).")
        _check_worker_address(beat.address)
        worker = self.pool.find_remote(beat.name, beat.address)
        if worker is not None:
            worker.last_seen = time.monotonic()
            worker.indices = list(beat.indices)
            if beat.concurrency != worker.concurrency:
                worker.concurrency = beat.concurrency
                self.admission.dispatch(worker.task)
            return worker.worker_id
        try:
            client = WorkerClient(
                beat.address,
                max_connections=min(beat.concurrency, 1024),
                read_timeout_s=self.config.workers.request_timeout_s,
            )
        except ValueError as e:
            raise BadRequestError(str(e)) from None
        worker = Worker(
            worker_id=self.pool.new_id("remote"),
            task=beat.name,
            address=beat.address,
            kind="remote",
            concurrency=beat.concurrency,
            client=client,
            indices=list(beat.indices),
        )
        self.pool.add(worker)
        return worker.worker_id

    # ------------------------------------------------------------------ views

    def list_sessions(self) -> list[SessionInfo]:
        """The open sessions."""
        now = time.monotonic()
        return [
            SessionInfo(
                session_id=s.session_id,
                task=s.task,
                index=s.index,
                worker_id=s.worker.worker_id,
                status=s.status,
                created_s=round(now - s.created, 3),
                idle_s=round(now - s.last_active, 3),
                turns=s.turns,
            )
            for s in self.sessions.sessions.values()
        ]

    def list_workers(self) -> list[WorkerInfo]:
        """The live workers."""
        now = time.monotonic()
        return [
            WorkerInfo(
                worker_id=w.worker_id,
                task=w.task,
                address=w.address,
                kind=w.kind,
                concurrency=w.concurrency,
                active=w.active,
                healthy=w.healthy,
                pid=w.pid,
                restarts=w.restarts,
                last_seen_s=round(now - w.last_seen, 3),
            )
            for w in self.pool.workers.values()
        ]

    def refresh_gauges(self) -> None:
        """Bring the worker gauges up to date (called before ``/metrics`` is rendered)."""
        m = self.metrics
        m.workers_up.clear()
        m.worker_slots_used.clear()
        m.worker_slots_total.clear()
        for w in self.pool.workers.values():
            m.workers_up.labels(w.task, w.kind).inc()
            m.worker_slots_used.labels(w.task).inc(w.active)
            m.worker_slots_total.labels(w.task).inc(w.concurrency)
        m.queue_depth.set(self.admission.waiting())
        m.sandboxes.clear()
        m.sandboxes_replaced.clear()
        shared = {task.name for task in self.config.tasks if uses_broker(task)}
        counted: set[str] = set()
        for w in self.pool.workers.values():
            if w.task in shared:  # every worker of the task reports the one pool of its broker: count it once
                if w.task in counted:
                    continue
                counted.add(w.task)
            for image, stats in w.sandbox_pool.items():
                for state in ("idle", "leased", "starting", "closing"):
                    m.sandboxes.labels(w.task, image, state).inc(stats.get(state, 0))
                m.sandboxes_replaced.labels(w.task, image).inc(stats.get("unhealthy", 0))

    # ------------------------------------------------------------------ upkeep

    async def _upkeep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.config.sessions.sweep_interval_s)
            try:
                self.sessions.stats.sample(len(self.sessions.sessions))
                self.sessions.expire_idle(self.config.sessions.ttl_s)
                for worker in self.pool.expire(self.config.workers.heartbeat_timeout_s):
                    await worker.client.aclose()
                await self._poll_sandbox_pools()
            except Exception:  # the loop must survive a bug in one sweep
                logger.exception("controller upkeep failed")

    async def _poll_sandbox_pools(self) -> None:
        """Fetch the sandbox pool counters of local workers whose task pools its sandboxes."""
        pooled = {task.name for task in self.config.tasks if task.sandbox_pool is not None}
        for worker in list(self.pool.workers.values()):
            if worker.kind != "local" or worker.task not in pooled:
                continue
            try:
                status = await asyncio.wait_for(worker.client.worker_status(), timeout=5)
            except Exception:  # a worker that does not answer is the supervisor's business, not the metrics'
                logger.debug("sandbox pool counters of %s unavailable", worker.worker_id, exc_info=True)
                continue
            pool = cast(dict[str, Any], status).get("sandbox_pool") if isinstance(status, dict) else None
            if isinstance(pool, dict):
                worker.sandbox_pool = cast(dict[str, Any], pool)


def _check_worker_address(address: str) -> None:
    """A worker's ``address`` must be an http(s) URL with a host (and a valid port, if any).

    Raises:
        BadRequestError: Saying what is wrong with it.
    """
    try:
        url = httpx.URL(address)
        url.port  # noqa: B018  # parsing the port is lazy: an invalid one raises here
    except (httpx.InvalidURL, ValueError) as e:
        raise BadRequestError(f"Worker address {address[:200]!r} is not a valid URL: {e}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise BadRequestError(f"Worker address must be an http(s) URL with a host, got {address[:200]!r}.")
