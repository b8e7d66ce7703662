"""The local worker: one process serving one task's envs over the worker side of the AgentRL API.

The controller spawns it (``python -m agentrl_controller.workers.local``) on a Unix socket and talks to it
exactly as it talks to upstream's ``agentrl-worker``: ``start_sample`` with a controller-allocated session
id, ``interact`` answered as ``{"session_id", "env_out"}``, ``cancel``. Each session owns one env; envs
of finished episodes are reused by later sessions. The process exits when its parent dies, so a killed
controller leaves no workers behind.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import uvicorn
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from agentrl_controller.config import TaskConfig
from agentrl_controller.gc_tuning import settle_heap
from agentrl_controller.http.fastpath import FastAnswer, FastJsonRoute
from agentrl_controller.http.models import WorkerInteractRequest, WorkerStartSampleRequest
from agentrl_controller.http.onewrite import OneWriteHttpProtocol
from agentrl_controller.workers.envs import env_factory
from agentrl_controller.workers.sandboxes import build_pool
from agentrl_envs.core import EnvPool
from agentrl_envs.core.env import ToolEnv
from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.sandboxes.broker_client import BrokerBackend
from agentrl_envs.sandboxes.pool import SandboxPool
from agentrl_envs.wire import CancelBody, Observation, WorkerInteractAnswer, cancel_body, worker_interact_answer

__all__ = ["LocalWorker", "build_worker", "create_worker_app", "loop_factory", "main", "worker_server"]

logger = logging.getLogger(__name__)

_METRIC_KEYS = ("score", "infra_error", "round", "fidelity", "backend", "error")


class _Refused(Exception):
    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


@dataclass
class _Session:
    session_id: int
    index: int
    env: ToolEnv
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    cancelling: bool = False


class LocalWorker:
    """The sessions of one worker process and what it does with them."""

    def __init__(self, make_env: Callable[[], ToolEnv], *, concurrency: int) -> None:
        """Prepare a worker; the first env is built at once so a broken task fails at start-up."""
        self.concurrency = concurrency
        self.sessions: dict[int, _Session] = {}
        first = make_env()
        self.num_samples = first.num_samples()
        self.tools = first.tools
        self.envs = EnvPool(make_env, size=concurrency, envs=[first])
        """One env per session, reused by later sessions once its episode ends."""
        self.sandbox_pool: SandboxPool | BrokerBackend | None = None
        """The pool the envs lease sandboxes from, owned by the worker (see ``workers/sandboxes.py``)."""

    def _observation(self, messages: list[dict[str, Any]], reward: float, info: dict[str, Any]) -> dict[str, Any]:
        """The step's ``env_out`` (see :class:`agentrl_envs.wire.Observation`)."""
        status = info.get("status", SampleStatus.RUNNING.value)
        return Observation(
            messages=messages,
            tools=info.get("tools") or self.tools,  # per sample for tasks whose tools vary (BFCL)
            status=status,
            finish=status != SampleStatus.RUNNING.value,
            reward=float(reward),
            metrics={k: info[k] for k in _METRIC_KEYS if k in info},
        ).worker_payload()

    async def start_sample(self, request: WorkerStartSampleRequest) -> dict[str, Any]:
        """Start a session; an env that fails to start ends it at once as ``task error``."""
        if request.session_id in self.sessions:
            raise _Refused(400, f"Session ID {request.session_id} already exists")
        if len(self.sessions) >= self.concurrency:
            raise _Refused(406, f"Sample concurrency limit reached: {self.concurrency}")
        index = _as_int_index(request.index, request.custom_task)
        if not 0 <= index < self.num_samples:
            raise _Refused(400, f"Index {index} is out of range: the task has {self.num_samples} samples.")
        env = None
        try:
            env = await self.envs.acquire()
            self.sessions[request.session_id] = _Session(request.session_id, index, env)
            if _nonblocking(env):
                messages, info = env.reset(options={"index": index})
            else:
                messages, info = await env.areset(options={"index": index})
        except EnvError as e:
            self._drop(request.session_id, env, reuse=True)
            raise _Refused(400, str(e)) from e
        except Exception as e:  # task boundary: a fault of the env is the task's error
            logger.exception("session %s: could not start sample %s", request.session_id, index)
            self._drop(request.session_id, env, reuse=False)
            info = {"status": SampleStatus.TASK_ERROR.value, "infra_error": True, "score": 0.0, "error": str(e)}
            return self._observation([], 0.0, info)
        return self._observation(messages, 0.0, info)

    async def interact(self, session_id: int, agent_messages: list[dict[str, Any]]) -> WorkerInteractAnswer:
        """Apply the agent's last message to the session's env."""
        session = self.sessions.get(session_id)
        if session is None:
            raise _Refused(400, "No such session")
        if session.lock.locked() or session.cancelling:
            raise _Refused(400, "Task Executing, please do not send new request.")
        action = agent_messages[-1] if agent_messages else {"role": "assistant", "content": ""}
        if _nonblocking(session.env):
            # Nothing can interleave with a step that never yields, so it needs neither the lock nor a thread: the
            # hop into a thread and back was the larger part of the worker's CPU for such an env.
            messages, reward, _, _, info = session.env.step(action)
        else:
            async with session.lock:
                messages, reward, _, _, info = await session.env.astep(action)
        env_out = self._observation(messages, reward, info)
        if env_out["finish"]:
            self._drop(session_id, session.env, reuse=not info.get("infra_error", False))
        return worker_interact_answer(session_id, env_out)

    async def cancel(self, session_id: int) -> CancelBody:
        """End a session; waits for a step in progress, then releases the env."""
        session = self.sessions.get(session_id)
        if session is None or session.cancelling:
            raise _Refused(400, "No such session")
        session.cancelling = True
        async with session.lock:
            self.sessions.pop(session_id, None)
            await self.envs.arelease(session.env, broken=True)  # mid-episode: closed, not reused
        return cancel_body(session_id)

    def _drop(self, session_id: int, env: ToolEnv | None, *, reuse: bool) -> None:
        self.sessions.pop(session_id, None)
        if env is not None:
            self.envs.release(env, broken=not reuse)

    def close(self) -> None:
        """Close every env (idle or in a session), then the sandbox pool (which closes the sandboxes it holds)."""
        self.envs.close()
        self.sessions.clear()
        if self.sandbox_pool is not None:
            self.sandbox_pool.close()
            self.sandbox_pool = None


def _nonblocking(env: ToolEnv) -> bool:
    """Whether ``env`` declares that its ``reset`` and ``step`` never block (:attr:`ToolEnv.nonblocking`).

    Such an env runs on the worker's event loop; any other env runs in a thread, so that a slow step (a database
    query, a shell command) does not stall the worker's other sessions. Declare it only for an env whose steps
    take microseconds and do no I/O (the no-op task); a blocking call there stalls every session of the worker.
    """
    return env.nonblocking is True


def _as_int_index(index: int | str, custom_task: dict[str, Any] | None) -> int:
    if index == -1 or custom_task is not None:
        raise _Refused(400, "Custom tasks (index -1) are not supported by this task.")
    if isinstance(index, str):
        if not index.lstrip("-").isdigit():
            raise _Refused(400, f"Index {index!r} is not a sample index of this task; use an integer.")
        index = int(index)
    return index


def create_worker_app(worker: LocalWorker) -> ASGIApp:
    """The worker's ASGI app (routes under ``/api`` as ``agentrl-worker`` serves them).

    ``interact`` has a fast path (see :mod:`agentrl_controller.http.fastpath`) for the body the controller sends,
    ``{"session_id": <int>, "messages": [<object>, ...]}``; any other body goes to the Starlette route.
    """

    async def fast_interact(_: Any, data: Any) -> FastAnswer | None:
        if type(data) is not dict or data.keys() != {"session_id", "messages"}:
            return None
        session_id, messages = data["session_id"], data["messages"]
        if type(session_id) is not int or type(messages) is not list or any(type(m) is not dict for m in messages):
            return None
        try:
            return 200, await worker.interact(session_id, messages), []
        except _Refused as e:
            return e.status_code, {"detail": e.detail}, []

    async def start_sample(request: Request) -> JSONResponse:
        body = WorkerStartSampleRequest.model_validate_json(await request.body())
        out = await worker.start_sample(body)
        return JSONResponse(out, headers={"session_id": str(body.session_id)})

    async def interact(request: Request) -> JSONResponse:
        body = WorkerInteractRequest.model_validate_json(await request.body())
        return JSONResponse(await worker.interact(body.session_id, body.messages))

    async def cancel(request: Request) -> JSONResponse:
        data = json.loads(await request.body())
        if not isinstance(data, dict) or not isinstance(data.get("session_id"), int):
            raise _Refused(400, "Body must be {'session_id': <int>}.")
        return JSONResponse(await worker.cancel(data["session_id"]))

    async def worker_status(_: Request) -> JSONResponse:
        status: dict[str, Any] = {"concurrency": worker.concurrency, "current": len(worker.sessions)}
        if worker.sandbox_pool is not None:  # an extra key: upstream's controller reads only the two above
            status["sandbox_pool"] = {image: asdict(stats) for image, stats in worker.sandbox_pool.stats().items()}
        return JSONResponse(status)

    async def get_indices(_: Request) -> JSONResponse:
        return JSONResponse(list(range(worker.num_samples)))

    async def get_sessions(_: Request) -> JSONResponse:
        return JSONResponse({str(sid): s.index for sid, s in worker.sessions.items()})

    async def refused(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, _Refused)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)

    async def invalid(_: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": f"Invalid request body: {exc}"}, status_code=422)

    routes = [
        Route("/api/start_sample", start_sample, methods=["POST"]),
        Route("/api/interact", interact, methods=["POST"]),
        Route("/api/cancel", cancel, methods=["POST"]),
        Route("/api/worker_status", worker_status, methods=["GET"]),
        Route("/api/get_indices", get_indices, methods=["GET"]),
        Route("/api/get_sessions", get_sessions, methods=["GET"]),
    ]
    handlers = {_Refused: refused, ValidationError: invalid, ValueError: invalid}
    app = Starlette(routes=routes, exception_handlers=handlers)
    return FastJsonRoute(app, path="/api/interact", handler=fast_interact)


async def _watch_parent(parent_pid: int, server: uvicorn.Server) -> None:
    """Stop when the controller that spawned us is gone (it may have been killed with -9)."""
    while os.getppid() == parent_pid:
        await asyncio.sleep(1.0)
    logger.warning("controller (pid %s) is gone; worker exiting", parent_pid)
    server.should_exit = True


async def build_worker(task: TaskConfig, *, sandbox_broker: str | None = None) -> LocalWorker:
    """The task's worker with its sandbox pool (its own, or ``sandbox_broker``'s), and a thread pool for steps."""
    options, pool = await asyncio.to_thread(build_pool, task, broker=sandbox_broker)
    factory = env_factory(task.env, split=task.split, options=options)
    try:
        worker = await asyncio.to_thread(LocalWorker, factory, concurrency=task.concurrency)
    except BaseException:
        if pool is not None:
            pool.close()
        raise
    worker.sandbox_pool = pool
    loop = asyncio.get_running_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=min(task.concurrency, 64) + 4))
    return worker


def worker_server(worker: LocalWorker, **bind: Any) -> uvicorn.Server:
    """The uvicorn server for ``worker``'s app, ready to serve; ``bind`` is ``uds=PATH`` or ``host=H, port=P``.

    Call it once the worker is built: it settles the process's heap (:func:`~agentrl_controller.gc_tuning.settle_heap`)
    and each response leaves in one socket write (:class:`~agentrl_controller.http.onewrite.OneWriteHttpProtocol`).
    """
    app = create_worker_app(worker)
    settle_heap()
    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        timeout_keep_alive=3600,
        backlog=4096,
        lifespan="off",
        http=OneWriteHttpProtocol,
        **bind,
    )
    return uvicorn.Server(config)


async def _serve(task: TaskConfig, uds: str, sandbox_broker: str | None) -> None:
    worker = await build_worker(task, sandbox_broker=sandbox_broker)
    server = worker_server(worker, uds=uds)
    # uvicorn re-raises the SIGTERM it shut down on once it has restored the previous handler; with the default
    # one that kills the process before the ``finally`` below closes the envs and the sandbox pool.
    signal.signal(signal.SIGTERM, lambda *_: None)
    watcher = asyncio.create_task(_watch_parent(os.getppid(), server))
    try:
        await server.serve()
    finally:
        watcher.cancel()
        await asyncio.to_thread(worker.close)


def main(argv: list[str] | None = None) -> None:
    """Entry point of a worker process: ``--task JSON --uds PATH``."""
    parser = argparse.ArgumentParser(prog="python -m agentrl_controller.workers.local")
    parser.add_argument("--task", required=True, help="The TaskConfig as JSON.")
    parser.add_argument("--uds", required=True, help="Unix socket path to listen on.")
    parser.add_argument("--sandbox-broker", help="Unix socket of the task's sandbox broker to lease from.")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s worker %(name)s: %(message)s")
    task = TaskConfig.model_validate_json(args.task)
    with contextlib.suppress(KeyboardInterrupt), asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(_serve(task, args.uds, args.sandbox_broker))


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The uvloop event loop where it is installed (as uvicorn picks it for the controller): cheaper per request."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


if __name__ == "__main__":
    main()
