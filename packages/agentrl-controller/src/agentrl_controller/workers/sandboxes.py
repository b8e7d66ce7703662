"""Sandboxes at the controller: the per-worker sandbox pool of a task, and the start-up sweep of orphans.

The pool lives in each worker process of a sandboxed task (the OS task), built from the task's
``sandbox_pool`` config and shared by all the envs of that process; a sandbox is a process tree (bwrap) or a
container owned by the process that started it, so leasing across processes would mean handing over
terminals and cgroups. The controller sweeps, at start, what sandboxes of dead owners left behind.
"""

from __future__ import annotations

import logging
from typing import Any

from agentrl_controller.config import ControllerConfig, SandboxPoolConfig, TaskConfig
from agentrl_controller.errors import ConfigError
from agentrl_envs.core.errors import BackendUnavailableError
from agentrl_envs.sandboxes.base import Limits, SandboxBackend
from agentrl_envs.sandboxes.pool import PoolSettings, SandboxPool
from agentrl_envs.sandboxes.sweep import Swept, sweep_leftovers

__all__ = ["build_pool", "sweep_orphans"]

logger = logging.getLogger(__name__)


def build_pool(task: TaskConfig) -> tuple[dict[str, Any], SandboxPool | None]:
    """The env options of ``task`` with its sandbox pool as the ``backend``, and the pool (to close at the end).

    Raises:
        ConfigError: If the task's options name a backend instance or options the pool cannot take.
    """
    settings = task.sandbox_pool
    options = dict(task.options)
    if settings is None:
        return options, None
    from agentrl_envs.tasks.os.backends import make_backend

    name = options.pop("backend", None) or "bwrap"
    backend_options = dict(options.pop("backend_options", None) or {})
    backend_options["pool_size"] = 0  # this SandboxPool, configured by sandbox_pool, keeps the warm sandboxes
    limits = options.pop("limits", None)
    if isinstance(limits, dict):
        limits = Limits(**limits)
    if not isinstance(name, str):
        raise ConfigError(f"task {task.name!r}: options.backend must be a backend name when sandbox_pool is set.")
    backend: SandboxBackend = make_backend(name, limits=limits, **backend_options)
    pool = SandboxPool(backend, _settings(settings))
    pool.prewarm(settings.images)
    options["backend"] = pool
    logger.info("task %s: %s sandbox pool %s", task.name, name, settings.model_dump())
    return options, pool


def _settings(config: SandboxPoolConfig) -> PoolSettings:
    return PoolSettings(
        warm=config.warm,
        maximum=config.maximum,
        exec_check=config.exec_check,
        health_timeout_s=config.health_timeout_s,
        lease_timeout_s=config.lease_timeout_s,
    )


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
