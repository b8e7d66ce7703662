"""Sandboxes at the controller: the per-worker sandbox pool of a task, and the start-up sweep of orphans.

The pool lives in each worker process of a sandboxed task (the OS task), built from the task's
``sandbox_pool`` config and shared by all the envs of that process; a sandbox is a process tree (bwrap) or a
container owned by the process that started it, so leasing across processes would mean handing over
terminals and cgroups. The controller sweeps, at start, what sandboxes of dead owners left behind.
"""

from __future__ import annotations

import logging
from typing import Any

from agentrl_controller.config import ControllerConfig, TaskConfig
from agentrl_controller.errors import ConfigError
from agentrl_envs.core.errors import BackendUnavailableError, EnvError
from agentrl_envs.sandboxes.options import open_pool, split_task_options
from agentrl_envs.sandboxes.pool import SandboxPool
from agentrl_envs.sandboxes.sweep import Swept, sweep_leftovers

__all__ = ["build_pool", "sweep_orphans"]

logger = logging.getLogger(__name__)


def build_pool(task: TaskConfig) -> tuple[dict[str, Any], SandboxPool | None]:
    """The env options of ``task`` with its sandbox pool as the ``backend``, and the pool (to close at the end).

    The sandbox options (``backend``, ``limits``, ``backend_options``) and ``sandbox_pool`` are parsed by the
    sandbox layer (:func:`~agentrl_envs.sandboxes.options.split_task_options`), as the env parses them in process.

    Raises:
        ConfigError: If the task's sandbox options are invalid; the message says which and how.
    """
    if task.sandbox_pool is None:
        return dict(task.options), None
    try:
        sandbox, options = split_task_options(task.options, pool=task.sandbox_pool)
    except EnvError as e:
        raise ConfigError(f"task {task.name!r}: {e}") from None
    pool = open_pool(sandbox)
    logger.info("task %s: %s sandbox pool %s", task.name, sandbox.backend, task.sandbox_pool.model_dump())
    return {**options, "backend": pool}, pool


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
