"""A task's sandbox options, parsed once, and the pooled sandbox factory they build.

:class:`SandboxOptions` is the one typed form of what a task says about its sandboxes: the backend (``bwrap``
or ``docker``), the per-sandbox :class:`~agentrl_envs.sandboxes.base.Limits`, the warm pool's
:class:`~agentrl_envs.sandboxes.pool.PoolSettings` (``None``: a cold sandbox per ``open``) and the image set
the backend resolves image names with. Both places that configure sandboxes parse into it with
:meth:`SandboxOptions.parse`, so both get the same defaults:

- the env in process: ``gym.make("AgentBench/OS-v0", backend="docker", limits=..., backend_options={"pool_size":
  n})``;
- the controller: a task's ``options`` (the same three keys) and its ``sandbox_pool`` (a ``PoolSettings``),
  split from the other env options by :func:`split_task_options`.

:func:`open_sandboxes` turns the options into a :class:`~agentrl_envs.sandboxes.base.SandboxBackend` (a pool in
front of the named backend, or the bare backend), which the env leases a sandbox per episode from.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrl_envs.core.errors import EnvError
from agentrl_envs.sandboxes.base import Limits, SandboxBackend
from agentrl_envs.sandboxes.pool import PoolSettings, SandboxPool

__all__ = [
    "BACKENDS",
    "ImageSet",
    "SandboxOptions",
    "open_pool",
    "open_sandboxes",
    "split_task_options",
]

BACKENDS = ("bwrap", "docker")
SANDBOX_KEYS = ("backend", "limits", "backend_options")
"""The task options that describe its sandboxes (the rest are the env's own)."""
_LEGACY_POOL_KEY = "pool_size"


@dataclass(frozen=True)
class ImageSet:
    """How the backends find an image by name: ``bwrap`` needs its unpacked rootfs, ``docker`` its tag."""

    rootfs: Callable[[str], Path]
    """The unpacked rootfs of an image (built on first use)."""
    docker_tag: Callable[[str], str]
    """The Docker tag of an image."""


class SandboxOptions(BaseModel):
    """Everything that decides which sandboxes a task gets; see the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["bwrap", "docker"] = "bwrap"
    """``bwrap`` (bubblewrap over a Debian rootfs, the embedded default) or ``docker`` (a real engine)."""
    limits: Limits = Field(default_factory=Limits)
    """Per-sandbox limits (upstream's: 1 GiB, 2 CPUs, 30 s per command)."""
    pool: PoolSettings | None = Field(default_factory=PoolSettings)
    """The warm pool in front of the backend; ``None``: each ``open`` starts a sandbox (cold)."""
    images: str = "agentrl_envs.tasks.os.images:OS_IMAGES"
    """``module:attribute`` of the :class:`ImageSet` (a name, so the options stay plain data: the OS task's
    images by default)."""

    @classmethod
    def parse(
        cls,
        *,
        backend: str | None = None,
        limits: Limits | Mapping[str, Any] | None = None,
        backend_options: Mapping[str, Any] | None = None,
        pool: PoolSettings | Mapping[str, Any] | None = None,
    ) -> SandboxOptions:
        """The options from a task's keyword options, as ``gym.make`` and the controller's config give them.

        Args:
            backend: ``"bwrap"`` (``None`` too) or ``"docker"``.
            limits: Per-sandbox limits, as :class:`Limits` or a mapping of its fields.
            backend_options: ``{"pool_size": n}``: a warm pool of ``n`` per image (0: none); the env's way.
            pool: The pool's settings (the controller's ``sandbox_pool``); not together with ``pool_size``.

        Raises:
            EnvError: If an option is unknown or out of range; the message names it and what is accepted.
        """
        extra = dict(backend_options or {})
        pool_size = extra.pop(_LEGACY_POOL_KEY, None)
        if extra:
            raise EnvError(
                f"Unknown sandbox backend option(s) {sorted(extra)}; backend_options takes only "
                f"{_LEGACY_POOL_KEY!r} (the pool's other settings go in the controller's sandbox_pool)."
            )
        if pool_size is not None and pool is not None:
            raise EnvError(
                f"The sandbox pool is given twice: backend_options.pool_size={pool_size!r} and a sandbox_pool; "
                "keep one (sandbox_pool: {warm: n} says the same as pool_size: n)."
            )
        fields: dict[str, Any] = {"backend": backend or "bwrap"}
        if limits is not None:
            fields["limits"] = limits
        if pool is not None:
            fields["pool"] = pool
        elif pool_size is not None:
            fields["pool"] = _pool_of_size(pool_size)
        try:
            return cls.model_validate(fields)
        except ValidationError as e:
            raise EnvError(f"Invalid sandbox options: {_explain(e)}") from None

    def image_set(self) -> ImageSet:
        """The :class:`ImageSet` that :attr:`images` names.

        Raises:
            EnvError: If it names nothing importable, or not an ``ImageSet``.
        """
        module_name, _, attribute = self.images.partition(":")
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError, ValueError) as e:
            raise EnvError(f"Sandbox image set {self.images!r} cannot be imported ({e}); give 'module:name'.") from e
        if not isinstance(found, ImageSet):
            raise EnvError(f"Sandbox image set {self.images!r} is a {type(found).__name__}, not an ImageSet.")
        return found


def split_task_options(
    options: Mapping[str, Any], *, pool: PoolSettings | Mapping[str, Any] | None = None
) -> tuple[SandboxOptions, dict[str, Any]]:
    """Split a task's options into its sandbox options and the env's other options.

    Raises:
        EnvError: If the sandbox options are invalid, or ``backend`` is not a backend name.
    """
    rest = dict(options)
    backend = rest.pop("backend", None)
    if backend is not None and not isinstance(backend, str):
        raise EnvError(f"options.backend must be a backend name ({', '.join(BACKENDS)}), not {backend!r}.")
    sandbox = SandboxOptions.parse(
        backend=backend, limits=rest.pop("limits", None), backend_options=rest.pop("backend_options", None), pool=pool
    )
    return sandbox, rest


def open_sandboxes(options: SandboxOptions) -> SandboxBackend:
    """The sandbox factory the options describe: :func:`open_pool`'s pool, or the bare backend (``pool=None``).

    Raises:
        EnvError: If the image set cannot be found.
        BackendUnavailableError: If the ``docker`` backend's extra is missing.
    """
    return _raw_backend(options) if options.pool is None else open_pool(options)


def open_pool(options: SandboxOptions) -> SandboxPool:
    """A warm :class:`SandboxPool` in front of the named backend, already warming ``pool.images``.

    Raises:
        EnvError: If ``options.pool`` is ``None`` or the image set cannot be found.
        BackendUnavailableError: If the ``docker`` backend's extra is missing.
    """
    if options.pool is None:
        raise EnvError("These sandbox options have no pool (pool=None); give pool settings or use open_sandboxes.")
    pool = SandboxPool(_raw_backend(options), options.pool)
    pool.prewarm(list(options.pool.images))
    return pool


def _raw_backend(options: SandboxOptions) -> SandboxBackend:
    images = options.image_set()
    if options.backend == "bwrap":
        from agentrl_envs.sandboxes.bwrap import BwrapBackend

        return BwrapBackend(images.rootfs, limits=options.limits)
    from agentrl_envs.sandboxes.docker import DockerBackend  # needs agentrl-envs[docker]: imported only when chosen

    return DockerBackend(images.docker_tag, limits=options.limits)


def _pool_of_size(pool_size: object) -> PoolSettings | None:
    if not isinstance(pool_size, int) or isinstance(pool_size, bool) or pool_size < 0:
        raise EnvError(f"backend_options.pool_size must be 0 (no pool) or more, not {pool_size!r}.")
    if pool_size == 0:
        return None
    return PoolSettings(warm=pool_size, maximum=max(PoolSettings().maximum, pool_size))


def _explain(error: ValidationError) -> str:
    """Pydantic's errors as ``field: message`` pairs (its own text repeats the model name and a URL)."""
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item["loc"]) or "options"
        parts.append(f"{where}: {item['msg']} (got {item.get('input')!r})")
    return "; ".join(parts)
