"""A bounded pool of engine processes shared by the ALFWorld envs of one process.

With one engine process per env (:class:`~agentrl_envs.tasks.alfworld.workers.EngineProcess`), a trainer with
two dozen episodes in flight runs two dozen TextWorld processes, whose start-up and memory starve a small
machine. An :class:`EnginePool` runs at most ``size`` children instead. A pooled child hosts several games at
once, each on its own :class:`~agentrl_envs.tasks.alfworld.engine.GameEngine` keyed by a game id (engines of
finished games are reused, so a child holds as many engines as it ever had games at once). An env gets a
:class:`PooledEngine`, which binds to one child for the episode and sends its reset and steps there; a lock per
child keeps one request at a time on its pipe.

Memory hygiene is kept: a child that has started ``recycle_after`` games takes no new ones and is stopped once
its last live game is released (the next reset starts a fresh child in its place). When every child is
retiring and the pool is full, a new game still goes to the least busy child rather than exceed ``size``.
"""

from __future__ import annotations

import itertools
import os
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from agentrl_envs.core.errors import InfraError
from agentrl_envs.tasks.alfworld.engine import EngineState
from agentrl_envs.tasks.alfworld.workers import ChildLostError, ask_child, start_child, stop_child

__all__ = ["EnginePool", "PooledEngine", "shared_pool"]

_POOLS_LOCK = threading.Lock()
_POOLS: dict[tuple[int, int, int, float], EnginePool] = {}


def _serve_games(connection: Connection) -> None:
    """The pooled child's loop: ``(request, (game id, argument))`` until ``close`` or the parent goes away."""
    from agentrl_envs.core.data import DataRoot
    from agentrl_envs.tasks.alfworld.engine import GameEngine
    from agentrl_envs.tasks.alfworld.games import GameStore

    engines: dict[int, GameEngine] = {}
    idle: list[GameEngine] = []
    try:
        while True:
            try:
                request, payload = connection.recv()
            except EOFError:
                return
            if request == "close":
                return
            key, argument = payload
            try:
                result: Any = None
                if request == "generate":
                    data_root, seed, path = argument
                    result = GameStore(DataRoot.find(data_root), seed=seed).game(path)
                elif request == "reset":
                    if key not in engines:
                        engines[key] = idle.pop() if idle else GameEngine()
                    result = engines[key].reset(argument)
                elif request == "step":
                    if key not in engines:
                        raise KeyError(f"game {key} is not live in this engine process; reset first")
                    result = engines[key].step(argument)
                elif request == "release" and key in engines:
                    idle.append(engines.pop(key))
            except Exception as e:  # report to the parent, which turns it into an infrastructure error
                connection.send(("error", f"{type(e).__name__}: {e}"))
            else:
                connection.send(("ok", result))
    finally:
        for engine in [*engines.values(), *idle]:
            engine.close()
        connection.close()


@dataclass(eq=False)
class _Child:
    """One pooled child, its pipe, and the games bound to it."""

    process: Any
    connection: Connection
    lock: threading.Lock = field(default_factory=threading.Lock)
    live: set[int] = field(default_factory=set)
    games_started: int = 0
    lost: bool = False

    @property
    def pid(self) -> int:
        return int(self.process.pid)


class EnginePool:
    """At most ``size`` engine processes, shared by the :class:`PooledEngine` handles it gives out. Thread-safe."""

    def __init__(self, *, size: int, recycle_after: int = 20, timeout_s: float = 120.0) -> None:
        """Set up; children start on demand.

        Args:
            size: The most engine processes alive at once.
            recycle_after: Games a child starts before it is replaced (once its live games are released).
            timeout_s: How long one reset or step may take in the child before it is considered hung.
        """
        if size < 1:
            raise ValueError(f"engine_pool_size must be at least 1, got {size}.")
        if recycle_after < 1:
            raise ValueError(f"recycle_after must be at least 1, got {recycle_after}.")
        self.size, self.recycle_after, self.timeout_s = size, recycle_after, timeout_s
        self._lock = threading.Lock()
        self._children: list[_Child] = []
        self._keys = itertools.count(1)
        self.children_started = 0

    @property
    def pids(self) -> list[int]:
        """The process ids of the children alive now."""
        with self._lock:
            return [child.pid for child in self._children]

    def engine(self) -> PooledEngine:
        """A handle for one env: it plays its games, one at a time, on this pool's children."""
        return PooledEngine(self)

    def close(self) -> None:
        """Stop every child (a later reset starts new ones)."""
        with self._lock:
            children, self._children = self._children, []
        for child in children:
            with child.lock:
                stop_child(child.process, child.connection)

    # ----------------------------------------------------------------- used by PooledEngine

    def _new_key(self) -> int:
        with self._lock:
            return next(self._keys)

    def _bind(self, key: int) -> _Child:
        """The child for a new game: the least busy one taking games, a new one if there is room, else any."""
        with self._lock:
            self._children = [child for child in self._children if not child.lost]
            taking = [child for child in self._children if child.games_started < self.recycle_after]
            if len(self._children) < self.size and (not taking or min(len(c.live) for c in taking) > 0):
                process, connection = start_child(_serve_games)
                child = _Child(process, connection)
                self._children.append(child)
                self.children_started += 1
            else:
                child = min(taking or self._children, key=lambda c: (len(c.live), c.games_started))
            child.live.add(key)
            child.games_started += 1
            return child

    def _release(self, child: _Child, key: int) -> None:
        """Forget a finished game; stop its child if that child is retiring and now idle."""
        with self._lock:
            child.live.discard(key)
            retire = not child.lost and not child.live and child.games_started >= self.recycle_after
            if retire and child in self._children:  # not when close() already took it
                self._children.remove(child)
        if retire:
            with child.lock:
                stop_child(child.process, child.connection)
        elif not child.lost:
            try:
                self._ask(child, "release", key, None)
            except InfraError:
                pass  # the child is gone; nothing left to release

    def _ask(self, child: _Child, request: str, key: int, argument: Any, timeout_s: float | None = None) -> Any:
        with child.lock:
            if child.lost:
                raise InfraError("The ALFWorld engine process of this game was lost; reset to start a new game.")
            try:
                return ask_child(child.connection, request, (key, argument), timeout_s or self.timeout_s)
            except ChildLostError:
                child.lost = True
                stop_child(child.process, child.connection)
                raise


class PooledEngine:
    """One env's view of an :class:`EnginePool`: the same calls as ``EngineProcess``. Not thread-safe (one per env)."""

    def __init__(self, pool: EnginePool) -> None:
        """Bind to nothing yet; the first reset picks a child."""
        self.pool = pool
        self._child: _Child | None = None
        self._key = 0

    @property
    def pid(self) -> int | None:
        """The process id of the child playing the current game (``None`` before the first reset)."""
        return self._child.pid if self._child is not None else None

    def reset(self, game: dict[str, Any]) -> EngineState:
        """Release the previous game and start ``game`` on the least busy child."""
        self._unbind()
        self._key = self.pool._new_key()
        self._child = self.pool._bind(self._key)
        return self.pool._ask(self._child, "reset", self._key, game)

    def step(self, command: str) -> EngineState:
        """Apply one command to the current game."""
        if self._child is None:
            raise InfraError("The ALFWorld engine process is not running; reset first.")
        return self.pool._ask(self._child, "step", self._key, command)

    def generate(self, data_root: str, seed: int, path: str) -> dict[str, Any]:
        """Generate (and cache) the game of a split entry in a pooled child, keeping TextWorld out of this process."""
        key = self.pool._new_key()
        child = self.pool._bind(key)
        try:
            return self.pool._ask(child, "generate", key, (data_root, seed, path), max(self.pool.timeout_s, 900.0))
        finally:
            self.pool._release(child, key)

    def release(self) -> None:
        """Release the current game once its episode is over, so its child can be recycled without waiting."""
        self._unbind()

    def close(self) -> None:
        """Release the current game (the pool's children stay for other envs)."""
        self._unbind()

    def _unbind(self) -> None:
        if self._child is not None:
            child, self._child = self._child, None
            self.pool._release(child, self._key)


def shared_pool(size: int, *, recycle_after: int = 20, timeout_s: float = 120.0) -> EnginePool:
    """The pool of this process with these settings (created on first use), shared by every env that asks."""
    key = (os.getpid(), size, recycle_after, timeout_s)
    with _POOLS_LOCK:
        if key not in _POOLS:
            _POOLS[key] = EnginePool(size=size, recycle_after=recycle_after, timeout_s=timeout_s)
        return _POOLS[key]
