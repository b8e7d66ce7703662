"""Choosing the sandbox backend of the OS task: ``bwrap`` (default) or ``docker``, behind a warm pool."""

from __future__ import annotations

from agentrl_envs.core.errors import EnvError
from agentrl_envs.sandboxes.base import Limits, SandboxBackend
from agentrl_envs.sandboxes.bwrap import BwrapBackend
from agentrl_envs.sandboxes.pool import PoolSettings, SandboxPool
from agentrl_envs.sandboxes.rootfs import ensure_rootfs
from agentrl_envs.tasks.os.images import docker_tag, recipe

__all__ = ["BACKENDS", "DEFAULT_POOL_SIZE", "make_backend"]

BACKENDS = ("bwrap", "docker")
DEFAULT_POOL_SIZE = 2
"""Started sandboxes kept ready per image: a reset leases one (well under a millisecond) instead of starting
one (tens of milliseconds on bwrap, hundreds on Docker); see docs/sandboxes.md."""


def make_backend(
    backend: str | SandboxBackend | None,
    *,
    limits: Limits | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
    **options: object,
) -> SandboxBackend:
    """A backend instance from a name (``bwrap``, ``docker``) or an instance passed through.

    Args:
        backend: The name, an existing backend, or ``None`` for ``bwrap``.
        limits: Per-sandbox limits (upstream's by default).
        pool_size: Started sandboxes (shell ready) kept per image in a :class:`SandboxPool` in front of the
            backend; each is leased once and closed in the background after its episode. 0: a sandbox is
            started on each ``open`` and closed by the caller (cold).
        **options: Options of the backend itself (none at present).
    """
    if isinstance(backend, SandboxBackend):
        return backend
    if pool_size < 0:
        raise EnvError(f"pool_size must be 0 (no pool) or more, not {pool_size}.")
    name = backend or "bwrap"
    raw: SandboxBackend
    if name == "bwrap":
        raw = BwrapBackend(lambda image: ensure_rootfs(recipe(image)), limits=limits, **options)
    elif name == "docker":
        from agentrl_envs.sandboxes.docker import DockerBackend

        raw = DockerBackend(docker_tag, limits=limits, **options)
    else:
        raise EnvError(f"Unknown OS sandbox backend {name!r}; choose one of {list(BACKENDS)}.")
    if pool_size == 0:
        return raw
    return SandboxPool(raw, PoolSettings(warm=pool_size, maximum=max(PoolSettings.maximum, pool_size)))
