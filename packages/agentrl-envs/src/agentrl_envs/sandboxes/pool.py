"""A pool of started sandboxes per image in front of any backend: warm size, maximum, health checks.

:class:`SandboxPool` is itself a :class:`SandboxBackend`, so an env takes it where it takes a backend. Per
image it keeps ``warm`` started sandboxes idle, their shells ready (refilled in the background after each
lease), never holds more than ``maximum`` at once (idle, leased, starting and closing together; a lease
beyond that waits), and checks an idle sandbox's health before leasing it (its shell alive and, optionally,
an independent ``true`` exiting 0; an unhealthy one is closed and the next one, or a fresh one, is taken).

A sandbox is leased once: when its episode gives it back it is closed, never handed to another episode,
so every episode starts on a system nobody has touched (a reset-and-reuse would have to prove the system
clean again, which the containment tests could not re-check for whatever an agent did). The closing
happens on a background thread, so giving a sandbox back costs the episode nothing (a Docker container
takes a hundred milliseconds or more to remove). :meth:`SandboxPool.close` stops the refills and closes
every sandbox, idle, leased or waiting to be closed, then the backend.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentrl_envs.core.errors import InfraError
from agentrl_envs.core.processes import pid_alive
from agentrl_envs.sandboxes.base import ExecResult, Sandbox, SandboxBackend, ShellResult

__all__ = ["PoolSettings", "PoolStats", "PooledSandbox", "SandboxPool"]

logger = logging.getLogger(__name__)

_RETRY_S = 5.0


class PoolSettings(BaseModel):
    """How a :class:`SandboxPool` sizes and checks its sandboxes (the same for every image).

    The one set of pool defaults: the OS env in process (``backend_options={"pool_size": n}`` sets ``warm``) and
    the controller's ``sandbox_pool`` (this model) both parse into it (see :mod:`agentrl_envs.sandboxes.options`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    warm: int = Field(default=2, ge=0, le=1000)
    """Started sandboxes kept idle per image, ready to lease."""
    maximum: int = Field(default=64, ge=1, le=10_000)
    """Most sandboxes per image at once (idle, leased, starting and closing); a lease beyond it waits. Sized for
    one pool shared by a controller worker's sessions (64 by default); an env alone never comes near it."""
    fillers: int = Field(default=2, ge=1, le=64)
    """Sandboxes started at once in the background (threads for the pool's life): one start at a time falls
    behind when episodes end faster than a sandbox starts (a Docker start takes half a second on a busy
    machine), and the engine and the kernel do part of a start while the other waits."""
    exec_check: bool = False
    """Also run ``true`` as an independent process in the sandbox before leasing it (about 70 ms on bwrap,
    as long as a cold bwrap start; the default checks that the shell process runs and is not a zombie)."""
    health_timeout_s: float = Field(default=5.0, gt=0)
    """Time the ``exec_check`` may take before the sandbox counts as unhealthy."""
    lease_timeout_s: float = Field(default=120.0, gt=0)
    """How long a lease waits for a sandbox when ``maximum`` are in use."""
    images: list[str] = Field(default_factory=list[str])
    """Images to start warming when the pool is built (others are warmed from their first lease on)."""

    @model_validator(mode="after")
    def _check(self) -> PoolSettings:
        if self.warm > self.maximum:
            raise ValueError(
                f"sandbox_pool.warm ({self.warm}) exceeds sandbox_pool.maximum ({self.maximum}); "
                "lower warm or raise maximum."
            )
        return self


@dataclass
class PoolStats:
    """Counters of one image's sandboxes (for metrics and tests)."""

    idle: int = 0
    leased: int = 0
    starting: int = 0
    closing: int = 0
    """Given back (or unhealthy) and waiting for, or in, their background close."""
    created: int = 0
    leases: int = 0
    unhealthy: int = 0
    """Idle sandboxes that failed the health check and were replaced."""


@dataclass
class _Image:
    idle: deque[Sandbox] = field(default_factory=deque)
    leased: set[int] = field(default_factory=set)
    live: dict[int, Sandbox] = field(default_factory=dict)
    """Every sandbox of the image the pool has not closed yet, by ``id()``."""
    starting: int = 0
    closing: int = 0
    failed_at: float = 0.0
    """When the filler last failed to start a sandbox of the image (it waits ``_RETRY_S`` before trying again)."""
    stats: PoolStats = field(default_factory=PoolStats)

    @property
    def total(self) -> int:
        return len(self.idle) + len(self.leased) + self.starting + self.closing


class PooledSandbox(Sandbox):
    """A leased sandbox; :meth:`close` gives it back to the pool, which closes it in the background."""

    def __init__(self, pool: SandboxPool, inner: Sandbox) -> None:
        """Wrap ``inner``, leased from ``pool``."""
        self.pool = pool
        self.inner = inner
        self.image = inner.image
        self.limits = inner.limits
        self._returned = False

    def run_shell(self, script: str) -> ShellResult:
        """Run ``script`` in the shell."""
        return self.inner.run_shell(script)

    def exec(self, argv: list[str], *, timeout: float | None = None) -> ExecResult:
        """Run an independent process."""
        return self.inner.exec(argv, timeout=timeout)

    def settle(self) -> None:
        """Wait until background processes stop changing."""
        self.inner.settle()

    @property
    def shell_pid(self) -> int:
        """The shell's host pid."""
        return self.inner.shell_pid

    @property
    def alive(self) -> bool:
        """Whether the shell is running."""
        return self.inner.alive

    def close(self) -> None:
        """Give the sandbox back to be closed (idempotent; returns at once, the pool closes it)."""
        if not self._returned:
            self._returned = True
            self.pool._release(self.inner)


class SandboxPool(SandboxBackend):
    """Pools the sandboxes of ``backend`` per image; see the module docstring."""

    def __init__(self, backend: SandboxBackend, settings: PoolSettings | None = None) -> None:
        """Pool ``backend`` (the pool owns it and closes it in :meth:`close`)."""
        self.backend = backend
        self.settings = settings or PoolSettings()
        self.name = backend.name
        self._images: dict[str, _Image] = {}
        self._cond = threading.Condition()
        self._filler_threads: list[threading.Thread] = []
        self._doomed: deque[Sandbox] = deque()
        """Sandboxes given back or found unhealthy, for the closer thread."""
        self._closer_thread: threading.Thread | None = None
        self._closed = False

    # ----------------------------------------------------------------- leasing

    def open(self, image: str) -> PooledSandbox:
        """Lease a healthy sandbox of ``image``: an idle one if there is one, else a fresh one.

        Raises:
            InfraError: If the pool is closed, no sandbox freed up within ``lease_timeout_s``, or one failed to start.
        """
        deadline = time.monotonic() + self.settings.lease_timeout_s
        while True:
            box = self._reserve(image, deadline)
            if box is None:
                box = self._start(image, reserved=True)
            elif not self._healthy(box):
                self._discard(image, box, unhealthy=True)
                continue
            with self._cond:
                self._images[image].stats.leases += 1
            self._fill(image)
            return PooledSandbox(self, box)

    def _reserve(self, image: str, deadline: float) -> Sandbox | None:
        """Mark an idle sandbox leased and return it, or reserve a start slot (``None``); waits at ``maximum``."""
        with self._cond:
            state = self._images.setdefault(image, _Image())
            while True:
                if self._closed:
                    raise InfraError("The sandbox pool is closed.")
                if state.idle:
                    box = state.idle.popleft()
                    state.leased.add(id(box))
                    return box
                if state.total < self.settings.maximum:
                    state.starting += 1
                    return None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise InfraError(
                        f"No {image} sandbox became free within {self.settings.lease_timeout_s:g} s: all "
                        f"{self.settings.maximum} are in use; raise the pool's maximum or lower the concurrency."
                    )
                self._cond.wait(remaining)

    def _start(self, image: str, *, reserved: bool) -> Sandbox:
        """Open a sandbox in a slot reserved by ``starting += 1``; leased if ``reserved`` else idle."""
        try:
            box = self.backend.open(image)
        except BaseException:
            with self._cond:
                self._images[image].starting -= 1
                self._cond.notify_all()
            raise
        with self._cond:
            state = self._images[image]
            state.starting -= 1
            state.stats.created += 1
            state.live[id(box)] = box
            if self._closed:
                state.live.pop(id(box))
            elif reserved:
                state.leased.add(id(box))
            else:
                state.idle.append(box)
            self._cond.notify_all()
            closed = self._closed
        if closed:
            box.close()
            raise InfraError("The sandbox pool was closed while a sandbox started.")
        return box

    def _healthy(self, box: Sandbox) -> bool:
        try:
            if not (box.alive and pid_alive(box.shell_pid)):
                return False
            if not self.settings.exec_check:
                return True
            return box.exec(["true"], timeout=self.settings.health_timeout_s).exit_code == 0
        except Exception:  # any failure of the check means the sandbox cannot be trusted with an episode
            logger.warning("sandbox pool: health check of a %s sandbox failed", box.image, exc_info=True)
            return False

    def _release(self, box: Sandbox) -> None:
        """Take a given-back sandbox out of the leased ones and have it closed in the background."""
        with self._cond:
            state = self._images.get(box.image)
            if state is None or id(box) not in state.leased:
                return
            state.leased.discard(id(box))
        self._doom(box.image, box)

    def _discard(self, image: str, box: Sandbox, *, unhealthy: bool) -> None:
        """Drop a reserved sandbox that failed its health check; it is closed in the background."""
        with self._cond:
            state = self._images[image]
            state.leased.discard(id(box))
            state.stats.unhealthy += int(unhealthy)
        self._doom(image, box)

    def _doom(self, image: str, box: Sandbox) -> None:
        """Queue ``box`` (already out of idle and leased) for the closer thread, started on first use."""
        with self._cond:
            state = self._images[image]
            if self._closed:  # the closer may have finished already: close here
                state.live.pop(id(box), None)
            else:
                state.closing += 1
                self._doomed.append(box)
            closed = self._closed
            if not closed and self._closer_thread is None:
                # Closing kills processes spawned by the process-lifetime thread (see agentrl_envs.core.processes);
                # any thread may do that, so one thread for the pool's lifetime does it off the episode's path.
                self._closer_thread = threading.Thread(target=self._closer, name="sandbox-pool-closer", daemon=True)
                self._closer_thread.start()
            self._cond.notify_all()
        if closed:
            with contextlib.suppress(Exception):
                box.close()

    def _closer(self) -> None:
        while True:
            with self._cond:
                while not self._doomed and not self._closed:
                    self._cond.wait()
                if not self._doomed:
                    return  # closed, and everything given back is closed
                box = self._doomed.popleft()
            try:
                box.close()
            except Exception:  # a sandbox that fails to close leaves leftovers for the sweep; keep closing others
                logger.exception("sandbox pool: closing a %s sandbox failed", box.image)
            finally:
                with self._cond:
                    state = self._images[box.image]
                    state.live.pop(id(box), None)
                    state.closing -= 1
                    self._cond.notify_all()  # a lease waiting at the maximum may go on
            self._fill(box.image)

    # ----------------------------------------------------------------- warming

    def prewarm(self, images: list[str]) -> None:
        """Start filling the pools of ``images`` now instead of at their first lease."""
        for image in images:
            with self._cond:
                self._images.setdefault(image, _Image())
            self._fill(image)

    def _fill(self, image: str) -> None:
        """Wake the filler threads (started on first use) to top the image's idle sandboxes up to ``warm``."""
        with self._cond:
            self._images.setdefault(image, _Image())
            if self._closed or self.settings.warm == 0:
                return
            if not self._filler_threads:
                # Threads for the pool's lifetime, woken after each lease (sandboxes die with this process,
                # not with the thread that started them: see agentrl_envs.core.processes).
                self._filler_threads = [
                    threading.Thread(target=self._filler, name=f"sandbox-pool-filler-{i}", daemon=True)
                    for i in range(self.settings.fillers)
                ]
                for thread in self._filler_threads:
                    thread.start()
            self._cond.notify_all()

    def _wanted(self) -> str | None:
        """An image that needs another warm sandbox, if any (called with the lock held)."""
        for image, state in self._images.items():
            if state.failed_at and time.monotonic() - state.failed_at < _RETRY_S:
                continue
            if len(state.idle) + state.starting < self.settings.warm and state.total < self.settings.maximum:
                return image
        return None

    def _filler(self) -> None:
        while True:
            with self._cond:
                image = None if self._closed else self._wanted()
                while not self._closed and image is None:
                    self._cond.wait(_RETRY_S)
                    image = None if self._closed else self._wanted()
                if self._closed or image is None:
                    return
                self._images[image].starting += 1
            try:
                self._start(image, reserved=False)
            except Exception:
                if self._closed:
                    return
                logger.exception("sandbox pool: could not start a %s sandbox; retrying in %g s", image, _RETRY_S)
                with self._cond:
                    self._images[image].failed_at = time.monotonic()
            else:
                with self._cond:
                    self._images[image].failed_at = 0.0

    # ----------------------------------------------------------------- state and shutdown

    def stats(self) -> dict[str, PoolStats]:
        """A snapshot of each image's counters."""
        with self._cond:
            return {
                image: PoolStats(
                    idle=len(s.idle),
                    leased=len(s.leased),
                    starting=s.starting,
                    closing=s.closing,
                    created=s.stats.created,
                    leases=s.stats.leases,
                    unhealthy=s.stats.unhealthy,
                )
                for image, s in self._images.items()
            }

    def close(self) -> None:
        """Stop refilling and close every sandbox of the pool, idle, leased or given back, then the backend."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            threads = [*self._filler_threads, *([self._closer_thread] if self._closer_thread else [])]
        for thread in threads:
            thread.join(timeout=60)  # the closer returns once everything given back is closed
        with self._cond:
            boxes = [box for state in self._images.values() for box in state.live.values()]
            for state in self._images.values():
                state.idle.clear()
                state.leased.clear()
                state.live.clear()
        for box in boxes:
            with contextlib.suppress(Exception):
                box.close()
        self.backend.close()
