"""The ALFWorld engine: TextWorld's PDDL environment with ALFWorld's wrappers, loaded lazily.

Upstream plays each game through ``textworld.envs.PddlEnv`` wrapped in ALFWorld's ``AlfredDemangler`` (names
such as ``drawer 1``) and ``AlfredInfos``; :class:`GameEngine` uses the same classes, and one engine plays game
after game (upstream builds a new one per episode). :mod:`.speedups` memoises the pure functions that make
upstream's resets slow. The heavy imports (TextWorld takes seconds to import) happen on first use; a missing
extra is caught earlier, when the env is made (:func:`require_extra`), with :class:`BackendUnavailableError`
naming ``agentrl-envs[alfworld]``.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from agentrl_envs.core.data import resolve_cache_dir
from agentrl_envs.core.errors import BackendUnavailableError
from agentrl_envs.tasks.alfworld import speedups

__all__ = ["EngineState", "GameEngine", "alfworld_modules", "require_extra"]

INSTALL_HINT = "The ALFWorld task needs its extra: pip install 'agentrl-envs[alfworld]'."
_EXTRA_MODULES = ("alfworld", "textworld", "nltk")
"""The top-level modules of the ``alfworld`` extra's packages."""

_TEXTWORLD = threading.RLock()
"""Held around every call into TextWorld: its grammar parser keeps process-wide state, and engines used from
several threads at once (an eval with concurrency, a thread pool) failed their resets with parse errors."""


def require_extra() -> None:
    """Check that the ``alfworld`` extra is installed, without importing it (TextWorld's import takes seconds).

    Raises:
        BackendUnavailableError: Naming ``pip install 'agentrl-envs[alfworld]'`` and the missing modules.
    """
    missing = [name for name in _EXTRA_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise BackendUnavailableError(f"{INSTALL_HINT} (not installed: {', '.join(missing)})")


@dataclass(frozen=True)
class AlfworldModules:
    """The third-party modules the task uses, imported once."""

    textworld: ModuleType
    pddl_env: type
    demangler: type
    infos: type
    goal_library: ModuleType
    constants: ModuleType


@cache
def alfworld_modules() -> AlfworldModules:
    """Import TextWorld, fast-downward and ALFWorld once and install the memoised translator.

    Raises:
        BackendUnavailableError: If the ``alfworld`` extra is not installed.
    """
    set_alfworld_data()
    try:
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        from alfworld.gen import constants, goal_library
        from textworld.envs.pddl import PddlEnv
    except ImportError as e:
        raise BackendUnavailableError(f"{INSTALL_HINT} ({e})") from e
    speedups.install(resolve_cache_dir() / "alfworld" / "sas")
    return AlfworldModules(textworld, PddlEnv, AlfredDemangler, AlfredInfos, goal_library, constants)


def set_alfworld_data() -> None:
    """Point ``ALFWORLD_DATA`` into our cache: ALFWorld creates that folder when imported (else in ``~/.cache``)."""
    os.environ.setdefault("ALFWORLD_DATA", str(resolve_cache_dir() / "alfworld" / "alfworld_data"))


@dataclass(frozen=True)
class EngineState:
    """What the agent loop reads after a reset or a step."""

    feedback: str
    admissible_commands: list[str]
    won: bool


class GameEngine:
    """One TextWorld PDDL environment wrapped as upstream wraps it; plays one game after another.

    Engines of one process take turns (one lock for all, see ``_TEXTWORLD``): any thread may use one, but threads
    gain no parallelism; for games in parallel use engine processes (the env's default).
    """

    def __init__(self, *, planner: bool = False) -> None:
        """Create the TextWorld environment (it loads a private copy of fast-downward's library).

        Args:
            planner: Report a walkthrough at reset: the game's own, or for a game without one fast-downward's
                plan from the start (seconds; game generation only).
        """
        mods = alfworld_modules()
        extras = ["walkthrough"] if planner else []
        infos = mods.textworld.EnvInfos(won=True, admissible_commands=True, extras=extras)
        with _TEXTWORLD:
            self._pddl = mods.pddl_env(infos)
        self._env = mods.infos(mods.demangler(self._pddl, shuffle=False))
        self._walkthrough: list[str] = []

    def reset(self, game: dict[str, Any]) -> EngineState:
        """Load a game (a ``game.tw-pddl`` dict: ``pddl_domain``, ``pddl_problem``, ``grammar``) and start it."""
        with _TEXTWORLD:
            self._env.load(game)
            state = self._env.reset()
        self._walkthrough = list(state.get("extra.walkthrough") or [])
        return _engine_state(state)

    def step(self, command: str) -> EngineState:
        """Apply one command; anything that is not admissible yields ``Nothing happens.``."""
        with _TEXTWORLD:
            state, _, _ = self._env.step(command)
        return _engine_state(state)

    @property
    def walkthrough(self) -> list[str]:
        """With ``planner=True``: the current game's walkthrough (its own or the planner's plan at reset)."""
        return list(self._walkthrough)

    @property
    def names(self) -> dict[str, str]:
        """The current game's PDDL names (lower-case, mangled ids) -> the names the agent sees (``drawer 1``)."""
        return {key: info.name for key, info in self._pddl._entity_infos.items()}

    def close(self) -> None:
        """Free fast-downward's planning task; its library copy stays loaded.

        Unloading copies (fast-downward's ``close_lib``) is what crashed: after a dozen engines were closed in
        one process, the next engine's library load died with SIGSEGV (an eval with concurrency 16, then game
        generation). A copy left loaded costs its mapped pages only; long runs use engine processes, which are
        recycled.
        """
        lib = getattr(self._pddl, "downward_lib", None)
        if lib is not None:
            with _TEXTWORLD:
                lib.cleanup()
            self._pddl.downward_lib = None


def _engine_state(state: Any) -> EngineState:
    return EngineState(
        feedback=str(state["feedback"]),
        admissible_commands=list(state["admissible_commands"]),
        won=bool(state["won"]),
    )
