"""The ALFWorld engine: TextWorld's PDDL environment with ALFWorld's wrappers, loaded lazily.

Upstream plays each game through ``textworld.envs.PddlEnv`` wrapped in ALFWorld's ``AlfredDemangler`` (names
such as ``drawer 1``) and ``AlfredInfos``; :class:`GameEngine` uses the same classes. Two costs of the upstream
loop are removed by memoising pure functions the engine calls on every load and reset:

- fast-downward's Python translator (``fast_downward.pddl2sas``), which ``PddlState`` runs twice per reset and
  which takes most of a second per call, is cached per (domain, problem, optimise) text;
- the TatSu parse of a game's text grammar (``GameLogic``) is cached per (domain, grammar) text.

Both results are only read after creation (the C library receives a copy of the SAS text), so sharing them
between resets is safe. The heavy imports (TextWorld takes seconds to import) happen on first use, and a
missing extra raises :class:`BackendUnavailableError` naming ``agentrl-envs[alfworld]``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from agentrl_envs.core.data import resolve_cache_dir
from agentrl_envs.core.errors import BackendUnavailableError

__all__ = ["EngineState", "GameEngine", "alfworld_modules"]

INSTALL_HINT = "The ALFWorld task needs its extra: pip install 'agentrl-envs[alfworld]'."
_CACHE_SIZE = 256
# fast-downward's translator rewrites sys.argv and swaps sys.stdout while it runs: one translation at a time.
_TRANSLATE_LOCK = threading.Lock()


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
    # ALFWorld creates its data folder at import time; keep it inside our cache, not the user's home.
    os.environ.setdefault("ALFWORLD_DATA", str(resolve_cache_dir() / "alfworld" / "alfworld_data"))
    try:
        import fast_downward
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
        from alfworld.gen import constants, goal_library
        from textworld.envs.pddl import PddlEnv
        from textworld.envs.pddl import logic as pddl_logic
    except ImportError as e:
        raise BackendUnavailableError(f"{INSTALL_HINT} ({e})") from e
    fast_downward.pddl2sas = _Memo(_translate(fast_downward.pddl2sas))
    pddl_logic.GameLogic = _Memo(pddl_logic.GameLogic)
    return AlfworldModules(textworld, PddlEnv, AlfredDemangler, AlfredInfos, goal_library, constants)


class _Memo:
    """A bounded, thread-safe memo of a pure function of strings and flags (LRU)."""

    def __init__(self, function: Callable[..., Any], size: int = _CACHE_SIZE) -> None:
        self.function = function
        self.size = size
        self._results: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        with self._lock:
            if key in self._results:
                self._results.move_to_end(key)
                return self._results[key]
        result = self.function(*args, **kwargs)
        with self._lock:
            self._results[key] = result
            while len(self._results) > self.size:
                self._results.popitem(last=False)
        return result


def _translate(pddl2sas: Callable[..., Any]) -> Callable[..., Any]:
    """fast-downward's translator, serialised and without its side effect on ``sys.argv``."""

    def translate(domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        with _TRANSLATE_LOCK:
            argv = list(sys.argv)
            try:
                return pddl2sas(domain, problem, verbose=verbose, optimize=optimize)
            finally:
                sys.argv[:] = argv

    return translate


@dataclass(frozen=True)
class EngineState:
    """What the agent loop reads after a reset or a step."""

    feedback: str
    admissible_commands: list[str]
    won: bool


class GameEngine:
    """One TextWorld PDDL environment wrapped as upstream wraps it; plays one game at a time.

    Not thread-safe: use one engine per thread or worker process.
    """

    def __init__(self, *, request_policy: bool = False) -> None:
        """Create the TextWorld environment (it loads a private copy of fast-downward's library).

        Args:
            request_policy: Ask the planner for a plan from each state (``policy_commands``); slow, used by
                game generation only.
        """
        mods = alfworld_modules()
        infos = mods.textworld.EnvInfos(
            won=True, admissible_commands=True, policy_commands=request_policy, extras=["gamefile"]
        )
        self._pddl = mods.pddl_env(infos)
        self._env = mods.infos(mods.demangler(self._pddl, shuffle=False))
        self._state: Any = None

    def reset(self, game: dict[str, Any]) -> EngineState:
        """Load a game (a ``game.tw-pddl`` dict: ``pddl_domain``, ``pddl_problem``, ``grammar``) and start it."""
        self._env.load(game)
        self._state = self._env.reset()
        return _engine_state(self._state)

    def step(self, command: str) -> EngineState:
        """Apply one command; anything that is not admissible yields ``Nothing happens.``."""
        self._state, _, _ = self._env.step(command)
        return _engine_state(self._state)

    def policy(self) -> list[str]:
        """The planner's plan from the current state (only with ``request_policy=True``)."""
        if self._state is None:
            return []
        return list(self._state.get("policy_commands") or [])

    def close(self) -> None:
        """Release fast-downward's library copy."""
        lib = getattr(self._pddl, "downward_lib", None)
        if lib is not None:
            import fast_downward

            fast_downward.close_lib(lib)
            self._pddl.downward_lib = None


def _engine_state(state: Any) -> EngineState:
    return EngineState(
        feedback=str(state["feedback"]),
        admissible_commands=list(state["admissible_commands"]),
        won=bool(state["won"]),
    )
