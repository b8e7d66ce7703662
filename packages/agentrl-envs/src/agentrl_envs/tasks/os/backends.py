"""Choosing the sandbox backend of the OS task: ``bwrap`` (default) or ``docker``."""

from __future__ import annotations

from agentrl_envs.core.errors import EnvError
from agentrl_envs.sandboxes.base import Limits, SandboxBackend
from agentrl_envs.sandboxes.bwrap import BwrapBackend
from agentrl_envs.sandboxes.rootfs import ensure_rootfs
from agentrl_envs.tasks.os.images import docker_tag, recipe

__all__ = ["BACKENDS", "make_backend"]

BACKENDS = ("bwrap", "docker")


def make_backend(
    backend: str | SandboxBackend | None, *, limits: Limits | None = None, **options: object
) -> SandboxBackend:
    """A backend instance from a name (``bwrap``, ``docker``) or an instance passed through.

    Args:
        backend: The name, an existing backend, or ``None`` for ``bwrap``.
        limits: Per-sandbox limits (upstream's by default).
        **options: Backend options (``docker``: ``pool_size``).
    """
    if isinstance(backend, SandboxBackend):
        return backend
    name = backend or "bwrap"
    if name == "bwrap":
        return BwrapBackend(lambda image: ensure_rootfs(recipe(image)), limits=limits)
    if name == "docker":
        from agentrl_envs.sandboxes.docker import DockerBackend

        return DockerBackend(docker_tag, limits=limits, **options)  # type: ignore[arg-type]
    raise EnvError(f"Unknown OS sandbox backend {name!r}; choose one of {list(BACKENDS)}.")
