"""Sessions: one episode of one task on one worker, from ``start_sample`` until it finishes or is cancelled.

The manager owns the rules that make the controller safe to drive from many clients: one request at a
time per session (a second gets 409), cancel at any point (a request in flight returns at once with
``cancelled``), idle sessions expire, and a session whose worker is lost ends as ``task error`` with
``infra_error`` instead of hanging. Finished sessions are freed at once (upstream's eval never cancels a
finished session) and remembered for a while so a late request gets 409 rather than 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from agentrl_controller.errors import BadRequestError, NotFoundError, SessionStateError, WorkerError
from agentrl_controller.metrics import ControllerMetrics
from agentrl_controller.sessions.admission import AdmissionQueue
from agentrl_controller.stats import EpisodeStats
from agentrl_controller.workers.pool import Worker, WorkerPool
from agentrl_envs.core.processes import pid_alive
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.wire import Observation, env_out

__all__ = ["Session", "SessionManager"]

logger = logging.getLogger(__name__)

_RUNNING = SampleStatus.RUNNING.value
_START_ATTEMPTS = 5
_START_BACKOFF_S = 0.05
_EXIT_GRACE_S = 0.5
"""How long a transport failure waits for a local worker's process to show as gone: a killed worker closes its
sockets a moment before the kernel marks it a zombie, and in that moment it still looks alive."""
_CANCEL_TIMEOUT_S = 30.0


@dataclass(eq=False)
class Session:
    """An open session."""

    session_id: int
    task: str
    index: int | str
    worker: Worker
    tools: list[dict[str, Any]] | None = None
    status: str = _RUNNING
    turns: int = 0
    created: float = field(default_factory=time.monotonic)
    last_active: float = field(default_factory=time.monotonic)
    busy: bool = False
    started: bool = False
    """The worker has answered start_sample; before that a failure is retried, not an ending."""
    call: asyncio.Future[Any] | None = None
    """The worker call of the interact in flight, cancelled when the controller ends the session."""
    final: dict[str, Any] | None = None
    """The observation that ended the session (cancel, lost worker), for a request still in flight."""


class SessionManager:
    """Starts, drives and ends sessions."""

    def __init__(self, pool: WorkerPool, admission: AdmissionQueue, metrics: ControllerMetrics, *, memory: int) -> None:
        """Bind to the workers; ``memory`` finished sessions are remembered for clearer late errors."""
        self.pool = pool
        self.admission = admission
        self.metrics = metrics
        self.sessions: dict[int, Session] = {}
        self._finished: OrderedDict[int, str] = OrderedDict()
        self._undelivered: OrderedDict[int, dict[str, Any]] = OrderedDict()
        """Final observations of sessions the controller ended (lost worker, idle), owed to the next interact."""
        self._memory = memory
        self.stats = EpisodeStats()
        """Finished episodes per task and sessions over time, for the dashboard."""
        # Ids keep growing across restarts, so an old id never names a new session on a long-lived worker.
        self._ids = itertools.count(int(time.time() * 1000) * 1000)
        self._background: set[asyncio.Task[Any]] = set()
        self._interact_metrics: dict[str, tuple[Any, Any]] = {}
        """Per task, the interact counter and the worker latency histogram with their labels bound (a ``labels``
        call takes a lock and builds a key, on every interact)."""
        pool.on_lost.append(self._worker_lost)

    # ------------------------------------------------------------------ API

    async def start(self, task: str, index: int | str, custom_task: dict[str, Any] | None) -> dict[str, Any]:
        """Start a session on the least busy worker of ``task`` (waiting in the admission queue if needed).

        Returns:
            The flat first observation, with ``session_id``.
        """
        last_error: WorkerError | None = None
        for attempt in range(_START_ATTEMPTS):
            worker = await self.admission.acquire(task)
            session = Session(next(self._ids), task, index, worker)
            self.sessions[session.session_id] = session
            try:
                with self._timed(task, "start_sample"):
                    out = await worker.client.start_sample(session.session_id, index, custom_task)
            except WorkerError as e:
                last_error = e
                self._forget(session)
                if e.status_code == 406:  # the worker is full (it may serve other controllers): try another
                    continue
                if e.status_code is not None:
                    raise BadRequestError(f"Task {task!r} refused sample {index!r}: {e}") from e
                if self._check_worker(worker) and attempt + 1 < _START_ATTEMPTS:
                    # A killed worker closes its sockets before its process is gone (and before the supervisor
                    # hears of it), so it still looks alive: wait a little rather than pick it again at once.
                    await asyncio.sleep(_START_BACKOFF_S * 2**attempt)
                continue
            except BaseException:
                self._forget(session)
                raise
            session.started = True
            self.metrics.sessions_started.labels(task).inc()
            self.metrics.sessions_active.labels(task).inc()
            return self._answer(session, out)
        message = f"Could not start a session of task {task!r} after {_START_ATTEMPTS} tries: {last_error}"
        logger.warning("%s", message)
        raise BadRequestError(message)

    async def interact(self, session_id: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """Send the agent's messages to the session's worker; returns the flat observation.

        A session the controller ended meanwhile (its worker was lost, it sat idle too long) answers its
        final observation once, so the client records ``task error``/``cancelled`` rather than a failed call.
        """
        final = self._undelivered.pop(session_id, None)
        if final is not None:
            return final
        session = self._get(session_id)
        if session.busy:
            raise SessionStateError(f"Session {session_id} is already processing a request; wait for its answer.")
        session.busy = True
        session.last_active = time.monotonic()
        # A task of its own, so that ending the session (cancel, lost worker) can stop the call at once: _end()
        # cancels it, and this request answers the ending instead.
        call = session.call = asyncio.ensure_future(self._timed_interact(session, messages))
        try:
            error = None
            out: Any = None
            try:
                out = await call
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if session.final is None or (current is not None and current.cancelling()):
                    raise  # this request itself was cancelled
            except WorkerError as e:
                error = f"worker error: {e}"
                if e.status_code is None:  # no answer at all: the worker may be dying
                    await self._await_exit(session.worker)
            except Exception as e:  # session boundary: a bug here must end the session, not the controller
                logger.exception("session %s: unexpected error in interact", session_id)
                error = f"controller error: {type(e).__name__}: {e}"
            if session.final is not None:
                # The controller ended it meanwhile. That ending is what the metrics and later calls see, so it is
                # the answer even if the worker's reply arrived at the same moment.
                return dict(session.final)
            if error is not None:
                return self._fail(session, error)
            observation = env_out(out)
            if observation is None:
                return self._fail(session, f"worker answered interact without env_out: {str(out)[:200]}")
            session.turns += 1
            self._bound_metrics(session.task)[0].inc()
            self.stats.interacts += 1
            return self._answer(session, observation)
        finally:
            session.busy = False
            session.call = None
            session.last_active = time.monotonic()

    async def cancel(self, session_id: int) -> str:
        """Cancel a session at any point; a request in flight on it returns ``cancelled`` at once."""
        session = self._get(session_id)
        self._end(session, SampleStatus.CANCELLED.value, reason="cancelled by the client", release=False)
        self._spawn(self._cancel_on_worker(session))
        return SampleStatus.CANCELLED.value

    def expire_idle(self, ttl_s: float) -> int:
        """Cancel sessions idle for more than ``ttl_s`` (none with a request in flight)."""
        now = time.monotonic()
        idle = [s for s in self.sessions.values() if s.started and not s.busy and now - s.last_active > ttl_s]
        for session in idle:
            logger.info("session %s idle for %.0f s: cancelling", session.session_id, now - session.last_active)
            reason = f"idle for more than {ttl_s:g} s"
            self._end(session, SampleStatus.CANCELLED.value, reason=reason, release=False, deliver=True)
            self._spawn(self._cancel_on_worker(session))
        return len(idle)

    async def cancel_all(self) -> None:
        """Cancel every open session and wait for the workers (shutdown)."""
        sessions = list(self.sessions.values())
        for session in sessions:
            self._end(session, SampleStatus.CANCELLED.value, reason="controller shutting down", release=False)
        await asyncio.gather(*(self._cancel_on_worker(s) for s in sessions), return_exceptions=True)
        for task in list(self._background):
            task.cancel()

    # ------------------------------------------------------------------ internals

    def _get(self, session_id: int) -> Session:
        session = self.sessions.get(session_id)
        if session is not None:
            return session
        status = self._finished.get(session_id)
        if status is not None:
            raise SessionStateError(f"Session {session_id} has already ended with status {status!r}.")
        raise NotFoundError(f"Unknown session {session_id}; start one with POST /api/start_sample.")

    async def _timed_interact(self, session: Session, messages: list[dict[str, Any]]) -> Any:
        start = time.perf_counter()
        try:
            return await session.worker.client.interact(session.session_id, messages)
        finally:
            self._bound_metrics(session.task)[1].observe(time.perf_counter() - start)

    def _bound_metrics(self, task: str) -> tuple[Any, Any]:
        bound = self._interact_metrics.get(task)
        if bound is None:
            m = self.metrics
            bound = self._interact_metrics[task] = (m.interacts.labels(task), m.worker_latency.labels(task, "interact"))
        return bound

    def _answer(self, session: Session, out: dict[str, Any]) -> dict[str, Any]:
        """The client's flat observation of the worker's ``out``; a finishing one frees the session."""
        observation = Observation.parse(out)
        if observation.tools is not None:
            session.tools = observation.tools
        observation.tools = session.tools  # absent from a worker's answer means "unchanged"; eval wants them all
        if observation.finish:
            score = _as_float(observation.metrics.get("score", observation.reward))
            self._end(session, observation.status, reason=None, release=True, score=score)
        elif not observation.messages:
            # eval rejects a running observation without messages; the worker broke the protocol
            return self._fail(session, "worker returned a running observation without messages")
        return observation.client_payload(session.session_id)

    def _fail(self, session: Session, error: str) -> dict[str, Any]:
        """End a session as an infrastructure fault (``task error`` + ``infra_error``)."""
        logger.error("session %s (%s): %s", session.session_id, session.task, error)
        worker_ok = self._check_worker(session.worker)
        self._end(session, SampleStatus.TASK_ERROR.value, reason=error, release=False)
        if worker_ok:
            self._spawn(self._cancel_on_worker(session))
        assert session.final is not None
        return dict(session.final)

    def _end(
        self,
        session: Session,
        status: str,
        *,
        reason: str | None,
        release: bool,
        deliver: bool = False,
        score: float | None = None,
    ) -> None:
        """Mark a session ended.

        Args:
            session: The session.
            status: Its final status.
            reason: Why the controller ended it (``None`` when the worker finished it).
            release: Give its slot back now (otherwise after the worker-side cancel).
            deliver: Keep the final observation for the client's next interact.
            score: The env's score of the episode, when the worker finished it.
        """
        if self.sessions.pop(session.session_id, None) is None:
            return
        session.status = status
        self._remember(session.session_id, status)
        infra_error = status == SampleStatus.TASK_ERROR.value
        if reason is not None:
            metrics = {"infra_error": infra_error, "error": reason} if infra_error else {"reason": reason}
            final = Observation(tools=session.tools, status=status, finish=True, metrics=metrics)
            session.final = final.client_payload(session.session_id)
            if deliver and not session.busy:
                self._undelivered[session.session_id] = session.final
                while len(self._undelivered) > self._memory:
                    self._undelivered.popitem(last=False)
        if session.call is not None:
            session.call.cancel()  # no-op when the call has completed (the worker finished the session)
        self.metrics.sessions_finished.labels(session.task, status).inc()
        self.stats.episode_finished(session.task, status, score)
        self.metrics.sessions_active.labels(session.task).dec()
        if release:
            self.admission.release(session.worker)

    def _forget(self, session: Session) -> None:
        """Undo a session that never started."""
        self.sessions.pop(session.session_id, None)
        self.admission.release(session.worker)

    def _remember(self, session_id: int, status: str) -> None:
        self._finished[session_id] = status
        while len(self._finished) > self._memory:
            self._finished.popitem(last=False)

    async def _cancel_on_worker(self, session: Session) -> None:
        """Stop the session on its worker, then give its slot back."""
        try:
            if session.worker.healthy:
                with self._timed(session.task, "cancel"):
                    await asyncio.wait_for(session.worker.client.cancel(session.session_id), _CANCEL_TIMEOUT_S)
        except (WorkerError, TimeoutError) as e:
            logger.info("session %s: cancel on worker %s: %s", session.session_id, session.worker.worker_id, e)
        finally:
            self.admission.release(session.worker)

    async def _await_exit(self, worker: Worker) -> None:
        """Give a local worker whose connection broke :data:`_EXIT_GRACE_S` to show whether it died."""
        if worker.kind != "local" or worker.pid is None:
            return
        deadline = time.monotonic() + _EXIT_GRACE_S
        while pid_alive(worker.pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    def _check_worker(self, worker: Worker) -> bool:
        """After a transport failure: a local worker whose process is gone is lost; returns whether it lives."""
        if worker.kind == "local" and worker.pid is not None and not pid_alive(worker.pid):
            self.pool.remove(worker, "process gone")
        return worker.healthy

    def _worker_lost(self, worker: Worker, reason: str) -> None:
        self.metrics.workers_lost.labels(worker.task).inc()
        # A session still starting on it is not ended here: its start_sample fails and is retried elsewhere.
        for session in [s for s in self.sessions.values() if s.worker is worker and s.started]:
            error = f"worker lost: {reason}"
            self._end(session, SampleStatus.TASK_ERROR.value, reason=error, release=True, deliver=True)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    @contextlib.contextmanager
    def _timed(self, task: str, call: str) -> Any:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.metrics.worker_latency.labels(task, call).observe(time.perf_counter() - start)


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
