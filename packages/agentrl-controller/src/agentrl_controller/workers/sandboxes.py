"""Sandboxes at the controller: a task's sandbox pool, its broker process, and the start-up sweep of orphans.

A sandboxed task (the OS task) with a ``sandbox_pool`` gets one pool of sandboxes. With one worker process the
pool lives in that process, shared by its envs. With several, one *sandbox broker* process
(:mod:`agentrl_envs.sandboxes.broker`), a child of the controller, owns the pool and every worker leases from
it over a Unix socket in the run directory (:class:`~agentrl_envs.sandboxes.broker_client.BrokerBackend`), so
``warm`` and ``maximum`` hold for the task as a whole. :class:`Broker` starts it before the workers, restarts it
when it exits (the workers' leased sandboxes are then gone: their episodes end as task errors) and stops it
after them. The controller sweeps, at start, what sandboxes of dead owners left behind.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any

from agentrl_controller.config import ControllerConfig, TaskConfig
from agentrl_controller.errors import ConfigError, WorkerError
from agentrl_controller.workers.logs import log_tail
from agentrl_envs.core.errors import BackendUnavailableError, EnvError
from agentrl_envs.sandboxes.broker_client import BrokerBackend
from agentrl_envs.sandboxes.options import SandboxOptions, open_pool, split_task_options
from agentrl_envs.sandboxes.pool import SandboxPool
from agentrl_envs.sandboxes.sweep import Swept, sweep_leftovers

__all__ = ["Broker", "build_pool", "sandbox_options", "sweep_orphans", "uses_broker"]

logger = logging.getLogger(__name__)

_BROKER_START_S = 60.0
_BROKER_BACKOFF_S = (0.5, 10.0)


def uses_broker(task: TaskConfig) -> bool:
    """Whether the task's workers lease from a broker: a pooled task with more than one worker process."""
    return task.sandbox_pool is not None and task.workers > 1


def sandbox_options(task: TaskConfig) -> tuple[SandboxOptions, dict[str, Any]]:
    """The task's sandbox options (with its ``sandbox_pool``) and its env's other options.

    Raises:
        ConfigError: If the task's sandbox options are invalid; the message says which and how.
    """
    try:
        return split_task_options(task.options, pool=task.sandbox_pool)
    except EnvError as e:
        raise ConfigError(f"task {task.name!r}: {e}") from None


def build_pool(
    task: TaskConfig, *, broker: str | None = None
) -> tuple[dict[str, Any], SandboxPool | BrokerBackend | None]:
    """The env options of ``task`` with its sandbox pool as the ``backend``, and the pool (to close at the end).

    The sandbox options (``backend``, ``limits``, ``backend_options``) and ``sandbox_pool`` are parsed by the
    sandbox layer (:func:`~agentrl_envs.sandboxes.options.split_task_options`), as the env parses them in process.

    Args:
        task: The task.
        broker: The Unix socket of the task's sandbox broker: lease from it instead of building a pool here.

    Raises:
        ConfigError: If the task's sandbox options are invalid; the message says which and how.
    """
    if task.sandbox_pool is None:
        return dict(task.options), None
    sandbox, options = sandbox_options(task)
    pool: SandboxPool | BrokerBackend
    if broker is not None:
        pool = BrokerBackend(
            broker, name=sandbox.backend, limits=sandbox.limits, lease_timeout_s=task.sandbox_pool.lease_timeout_s
        )
    else:
        pool = open_pool(sandbox)
    logger.info("task %s: %s sandbox pool %s (broker: %s)", task.name, sandbox.backend, sandbox.pool, broker)
    return {**options, "backend": pool}, pool


class Broker:
    """The sandbox broker process of one task: started, restarted on exit, stopped (see the module docstring)."""

    def __init__(self, task: TaskConfig, path: Path, log_path: Path) -> None:
        """Prepare the broker of ``task`` at the socket ``path`` (nothing starts until :meth:`start`)."""
        self.task = task
        self.path = path
        self.log_path = log_path
        self.process: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self._runner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stopping = False

    @property
    def pid(self) -> int | None:
        """The broker's pid while it runs and answers (``None`` before, and while it restarts)."""
        if self.process is None or self.process.returncode is not None or not self._ready.is_set():
            return None
        return self.process.pid

    async def start(self) -> None:
        """Start the broker (once) and wait until it answers.

        Raises:
            WorkerError: If it did not come up; the message has its log's tail.
        """
        if self._runner is None:
            options, _ = sandbox_options(self.task)
            await self._spawn(options.model_dump_json())
            self._runner = asyncio.create_task(self._watch(options.model_dump_json()), name=f"broker-{self.task.name}")
        await self._ready.wait()

    async def _spawn(self, options: str) -> None:
        self._ready.clear()
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "agentrl_envs.sandboxes.broker",
                "--socket",
                str(self.path),
                "--options",
                options,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # drained by the controller, as its workers are
            )
        deadline = time.monotonic() + _BROKER_START_S
        backend = BrokerBackend(str(self.path), name="", limits=sandbox_options(self.task)[0].limits)
        while time.monotonic() < deadline:
            if self.process.returncode is not None:
                code = self.process.returncode
                raise WorkerError(f"sandbox broker exited with code {code}: {log_tail(self.log_path)}")
            try:
                await asyncio.to_thread(backend.stats)
            except Exception:  # not listening yet
                await asyncio.sleep(0.05)
            else:
                self._ready.set()
                logger.info("task %s: sandbox broker %s up at %s", self.task.name, self.process.pid, self.path)
                return
        await self._kill()
        raise WorkerError(f"sandbox broker not ready after {_BROKER_START_S:g} s: {log_tail(self.log_path)}")

    async def _watch(self, options: str) -> None:
        backoff = _BROKER_BACKOFF_S[0]
        while not self._stopping:
            assert self.process is not None
            code = await self.process.wait()
            if self._stopping:
                return
            logger.error(
                "task %s: sandbox broker %s exited with code %s; its leased sandboxes are gone, restarting it",
                self.task.name,
                self.process.pid,
                code,
            )
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, _BROKER_BACKOFF_S[1])
            self.restarts += 1
            try:
                await self._spawn(options)
            except WorkerError as e:
                logger.error("task %s: sandbox broker restart failed: %s", self.task.name, e)

    async def stop(self, timeout_s: float) -> None:
        """SIGTERM the broker (it closes every sandbox), then kill it after ``timeout_s``."""
        self._stopping = True
        if self._runner is not None:
            self._runner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._runner
        if self.process is None or self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), timeout_s)
        except TimeoutError:
            await self._kill()

    async def _kill(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()


def sweep_orphans(config: ControllerConfig) -> Swept:
    """Remove sandboxes whose owner process is gone; containers too when a task uses the docker backend."""
    client = None
    if any(task.options.get("backend") == "docker" for task in config.tasks):
        try:
            from agentrl_envs.sandboxes.docker import engine_client

            client = engine_client()
        except BackendUnavailableError as e:
            logger.warning("sandbox sweep: containers not swept: %s", e)
    try:
        swept = sweep_leftovers(docker_client=client)
    except Exception:  # a failed sweep must not keep the controller from serving; it is retried at the next start
        logger.exception("sandbox sweep failed; leftovers of dead owners may remain")
        return Swept()
    if swept != Swept():
        logger.warning("sandbox sweep: removed leftovers of dead owners: %s", swept)
    return swept
