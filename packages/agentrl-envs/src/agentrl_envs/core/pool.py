"""A pool of environments of one kind, made on demand off the event loop and reused across episodes.

Making an env can take seconds (a sandbox, a database, a game engine) and closing one frees what it holds, so
every user that plays many episodes (the evaluation runner, the trainer's rollout producer, the controller's
local worker) borrows envs from an :class:`EnvPool` instead of making one per episode:

- :meth:`EnvPool.acquire` hands out an idle env, or makes one in a thread (``make`` may block) while fewer than
  ``size`` are borrowed, and waits otherwise;
- :meth:`EnvPool.release` takes it back for the next episode, or closes it for good when it is ``broken`` (its
  episode ended in an infrastructure error: what it holds may be gone);
- :meth:`EnvPool.aclose` (or :meth:`EnvPool.close`, off the loop) closes every env the pool made, idle or
  borrowed, each exactly once.

Closing never raises: a failure is logged once, with its traceback, and the other envs are still closed (a
cleanup error must not hide the outcome of the run that is ending). The pool belongs to one event loop and is
not thread-safe; only ``make`` and the closes run in threads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Generic, Protocol, TypeVar

__all__ = ["EnvPool", "close_quietly"]

logger = logging.getLogger(__name__)


class _Closable(Protocol):
    def close(self) -> None: ...


E = TypeVar("E", bound=_Closable)


def close_quietly(env: _Closable) -> None:
    """Close ``env``; a failure is logged with its traceback, not raised (cleanup must not mask an outcome)."""
    try:
        env.close()
    except Exception:  # cleanup boundary: logged once here, with the cause
        logger.exception("error while closing an environment (%s)", type(env).__name__)


class EnvPool(Generic[E]):
    """Up to ``size`` borrowed environments made by ``make``, reused across episodes.

    Example::

        pool = EnvPool(lambda: agentrl_envs.make("db").unwrapped, size=8)
        env = await pool.acquire()
        try:
            ...  # play one episode
        finally:
            pool.release(env, broken=trajectory.infra_error)
        await pool.aclose()
    """

    def __init__(self, make: Callable[[], E], *, size: int | None = None, envs: Iterable[E] = ()) -> None:
        """Create a pool.

        Args:
            make: Makes one env; may block (it runs in a thread of the loop's default executor).
            size: The most envs borrowed at once (:meth:`acquire` waits beyond it), hence also the most the pool
                holds; ``None``: no limit.
            envs: Envs made already (e.g. the first, made to learn the task's size), kept idle for reuse; the pool
                closes them like its own.

        Raises:
            ValueError: If ``size`` is below 1.
        """
        if size is not None and size < 1:
            raise ValueError(f"An EnvPool's size must be at least 1 (or None for no limit), got {size}.")
        self.make = make
        self.size = size
        self._idle: list[E] = list(envs)
        self._open: dict[int, E] = {id(env): env for env in self._idle}
        """Every env the pool made and has not closed, idle or borrowed, by identity (envs need not be hashable)."""
        self._slots = asyncio.Semaphore(size) if size is not None else None
        self._closed = False

    @property
    def created(self) -> int:
        """How many envs the pool holds now (idle or borrowed)."""
        return len(self._open)

    @property
    def idle(self) -> int:
        """How many envs wait for an episode."""
        return len(self._idle)

    async def acquire(self) -> E:
        """An idle env, or a new one; waits while ``size`` envs are borrowed.

        Raises:
            RuntimeError: If the pool is closed.
            Exception: Whatever ``make`` raised (the slot is given back).
        """
        self._check_open()
        if self._slots is not None:
            await self._slots.acquire()
        try:
            self._check_open()
            if self._idle:
                return self._idle.pop()
            return await self._make()
        except BaseException:
            self._free_slot()
            raise

    def release(self, env: E, *, broken: bool = False) -> None:
        """Give back a borrowed env: kept for the next episode, or closed (here, on the caller's thread) if ``broken``.

        An env given back after :meth:`aclose` was closed there already and is only forgotten.
        """
        if self._open.get(id(env)) is not env:
            self._free_slot()  # closed by aclose while borrowed
            return
        if broken:
            del self._open[id(env)]
            close_quietly(env)
        else:
            self._idle.append(env)
        self._free_slot()

    async def arelease(self, env: E, *, broken: bool = False) -> None:
        """:meth:`release`, closing a broken env in a thread so the loop goes on serving others meanwhile.

        The slot is free at once: a new env may be made while this one closes (it is no longer the pool's).
        """
        if broken and self._open.get(id(env)) is env:
            del self._open[id(env)]
            self._free_slot()
            await asyncio.to_thread(close_quietly, env)
            return
        self.release(env, broken=broken)

    async def aclose(self) -> None:
        """Close every env the pool holds (idle or borrowed) at once, each in a thread; the pool takes no more."""
        await asyncio.gather(*(asyncio.to_thread(close_quietly, env) for env in self._take_all()))

    def close(self) -> None:
        """Close every env the pool holds, one after another on this thread (no event loop needed)."""
        for env in self._take_all():
            close_quietly(env)

    def _take_all(self) -> list[E]:
        self._closed = True
        envs = list(self._open.values())
        self._open.clear()
        self._idle.clear()
        return envs

    async def _make(self) -> E:
        making = asyncio.ensure_future(asyncio.to_thread(self.make))
        try:
            # shield: a cancelled acquire must not orphan the env the thread goes on making
            env = await asyncio.shield(making)
        except asyncio.CancelledError:
            making.add_done_callback(_close_if_made)
            raise
        if self._closed:  # closed while it was being made: it is not ours to hand out any more
            close_quietly(env)
            raise RuntimeError("The env pool was closed while an env was being made.")
        self._open[id(env)] = env
        return env

    def _free_slot(self) -> None:
        if self._slots is not None:
            self._slots.release()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("The env pool is closed; make a new one to play more episodes.")


def _close_if_made(making: asyncio.Future[E]) -> None:
    """Close the env a cancelled :meth:`EnvPool.acquire` left being made, once it is made."""
    if not making.cancelled() and making.exception() is None:
        close_quietly(making.result())
