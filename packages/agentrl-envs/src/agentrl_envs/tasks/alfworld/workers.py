"""The engine in a recycled child process, so a long-lived env keeps flat memory.

A TextWorld engine that plays game after game keeps growing: TextWorld interns every ``Proposition`` it
creates in a global, never-emptied flyweight cache (``mementos``), about a megabyte per distinct game, and the
Python allocator keeps the freed megabytes of each game's translated task. Upstream lives with it by
restarting its workers. :class:`EngineProcess` runs
:class:`~agentrl_envs.tasks.alfworld.engine.GameEngine` in a child process and replaces the child every
``recycle_after`` episodes, so the memory of the env's process and its child stays bounded whatever the number
of episodes. Games missing from the cache are generated in the child too, since generation runs the engine.

Children are forked from a ``forkserver`` that has imported TextWorld once, so a new child is ready in
milliseconds instead of the seconds a fresh import takes.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
from multiprocessing.connection import Connection
from typing import Any

from agentrl_envs.core.errors import InfraError
from agentrl_envs.tasks.alfworld.engine import EngineState, set_alfworld_data

__all__ = ["ChildLostError", "EngineProcess", "ask_child", "start_child", "stop_child"]

logger = logging.getLogger(__name__)

_PRELOAD = ["agentrl_envs.tasks.alfworld.engine", "textworld", "fast_downward", "alfworld.gen.constants"]
_CONTEXT_LOCK = threading.Lock()
_context: Any = None


def _forkserver() -> Any:
    """The multiprocessing context whose server has TextWorld imported (set up once per process)."""
    global _context
    with _CONTEXT_LOCK:
        if _context is None:
            set_alfworld_data()  # the forkserver inherits the environment as it is now
            _context = multiprocessing.get_context("forkserver")
            _context.set_forkserver_preload(_PRELOAD)
        return _context


def _serve(connection: Connection) -> None:
    """The child's loop: answer ``reset``/``step`` requests until ``close`` or the parent goes away."""
    from agentrl_envs.core.data import DataRoot
    from agentrl_envs.tasks.alfworld.engine import GameEngine
    from agentrl_envs.tasks.alfworld.games import GameStore

    engine = GameEngine()
    try:
        while True:
            try:
                request, argument = connection.recv()
            except EOFError:
                return
            if request == "close":
                return
            try:
                if request == "generate":
                    data_root, seed, path = argument
                    result: Any = GameStore(DataRoot.find(data_root), seed=seed).game(path)
                elif request == "reset":
                    result = engine.reset(argument)
                else:
                    result = engine.step(argument)
            except Exception as e:  # report to the parent, which turns it into an infrastructure error
                connection.send(("error", f"{type(e).__name__}: {e}"))
            else:
                connection.send(("ok", result))
    finally:
        engine.close()
        connection.close()


class EngineProcess:
    """A :class:`GameEngine` in a child process, replaced every ``recycle_after`` episodes.

    Not thread-safe: one per env, like the engine itself.
    """

    def __init__(self, *, recycle_after: int = 20, timeout_s: float = 120.0) -> None:
        """Set up; the child starts on the first reset.

        Args:
            recycle_after: Episodes a child plays before it is replaced.
            timeout_s: How long a reset or step may take before the child is considered hung.
        """
        if recycle_after < 1:
            raise ValueError(f"recycle_after must be at least 1, got {recycle_after}.")
        self.recycle_after = recycle_after
        self.timeout_s = timeout_s
        self._process: Any = None
        self._connection: Connection | None = None
        self._episodes = 0
        self.children_started = 0

    @property
    def pid(self) -> int | None:
        """The current child's process id (``None`` when none runs)."""
        return self._process.pid if self._process is not None else None

    def reset(self, game: dict[str, Any]) -> EngineState:
        """Start ``game`` in the child (a fresh child if the current one has played its share)."""
        if self._process is not None and (self._episodes >= self.recycle_after or not self._process.is_alive()):
            self._stop()
        if self._process is None:
            self._start()
        self._episodes += 1
        return self._call("reset", game)

    def generate(self, data_root: str, seed: int, path: str) -> dict[str, Any]:
        """Generate (and cache) the game of a split entry in the child, keeping TextWorld out of this process."""
        if self._process is None or not self._process.is_alive():
            self._stop()
            self._start()
        return self._call("generate", (data_root, seed, path), timeout_s=max(self.timeout_s, 900.0))

    def step(self, command: str) -> EngineState:
        """Apply one command in the child."""
        if self._process is None:
            raise InfraError("The ALFWorld engine process is not running; reset first.")
        return self._call("step", command)

    def close(self) -> None:
        """Stop the child."""
        self._stop()

    def _call(self, request: str, argument: Any, *, timeout_s: float | None = None) -> Any:
        assert self._connection is not None
        try:
            return ask_child(self._connection, request, argument, timeout_s or self.timeout_s)
        except ChildLostError:
            self._stop()
            raise

    def _start(self) -> None:
        self._process, self._connection = start_child(_serve)
        self._episodes = 0
        self.children_started += 1

    def _stop(self) -> None:
        process, connection = self._process, self._connection
        self._process = self._connection = None
        stop_child(process, connection)


class ChildLostError(InfraError):
    """The engine child died, hung or closed its pipe: it has been or must be stopped."""


def start_child(target: Any) -> tuple[Any, Connection]:
    """Start ``target(connection)`` in a child forked from the TextWorld forkserver; returns it and our pipe end."""
    context = _forkserver()
    parent, child = context.Pipe()
    process = context.Process(target=target, args=(child,), daemon=True, name="alfworld-engine")
    process.start()
    child.close()
    return process, parent


def ask_child(connection: Connection, request: str, argument: Any, timeout_s: float) -> Any:
    """Send one request and wait for its answer.

    Raises:
        ChildLostError: If the child did not answer within ``timeout_s`` or its pipe broke (stop the child).
        InfraError: If the engine raised (the child is fine).
    """
    try:
        connection.send((request, argument))
        if not connection.poll(timeout_s):
            raise TimeoutError(f"no answer to {request!r} within {timeout_s} s")
        status, payload = connection.recv()
    except (OSError, EOFError, TimeoutError) as e:
        raise ChildLostError(f"The ALFWorld engine process failed during {request!r}: {e}") from e
    if status == "error":
        raise InfraError(f"The ALFWorld engine failed during {request!r}: {payload}")
    return payload


def stop_child(process: Any, connection: Connection | None) -> None:
    """Ask the child to close, then kill it if it does not stop within seconds."""
    if connection is not None:
        try:
            connection.send(("close", None))
        except OSError:
            pass
        connection.close()
    if process is not None:
        process.join(timeout=5)
        if process.is_alive():
            logger.warning("ALFWorld engine process %s did not stop; killing it", process.pid)
            process.kill()
            process.join(timeout=5)
