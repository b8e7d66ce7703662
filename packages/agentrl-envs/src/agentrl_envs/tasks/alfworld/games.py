"""ALFWorld game files (``game.tw-pddl``), generated offline from the split lists and cached.

A game file is upstream's JSON: ``pddl_domain`` (upstream's 2.1.1 domain from the data root), ``grammar``
(upstream's 2.1.1 grammar from the data root with the task sentence in place of ``UNKNOWN GOAL``, as
``alfworld-generate`` does), ``pddl_problem`` (:mod:`.problems`), ``solvable`` and ``walkthrough``.

A game counts only if a plan, replayed command by command through the engine, wins within the step limit: the
hand-coded expert's (:mod:`.expert`), or when that fails fast-downward's planner's (TextWorld's ``replan``).
Otherwise the next seed is tried. The plan is the game's ``walkthrough``; ``solver`` says whose it is. Games are
generated lazily, one per requested index, and cached under ``$AGENTRL_CACHE_DIR/alfworld/games/<key>/``,
where the key hashes the inputs (domain, grammar, generator version, seed), so changed inputs rebuild.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

from agentrl_envs.core.data import DataRoot, resolve_cache_dir
from agentrl_envs.core.errors import DataError, InfraError
from agentrl_envs.tasks.alfworld.engine import EngineState, GameEngine
from agentrl_envs.tasks.alfworld.expert import expert_plan
from agentrl_envs.tasks.alfworld.problems import Problem, build_problem
from agentrl_envs.tasks.alfworld.scenes import GameSpec, load_scene, parse_entry

__all__ = ["GameStore", "SPLIT_FILES", "prepare_games", "split_entries"]

logger = logging.getLogger(__name__)

GENERATOR_VERSION = "3"
SPLIT_FILES = {"test": "new_std.json", "dev": "dev.json", "train": "train_valid.json"}
"""Our split names -> upstream's split lists (``alfworld-std`` reads ``new_std``, ``env_train`` ``train_valid``)."""
MAX_PLAN_STEPS = 20
"""A plan longer than upstream's step limit could not be played within an episode."""
MAX_ATTEMPTS = 8
_UNKNOWN_GOAL = "UNKNOWN GOAL"


def split_entries(data: DataRoot, split: str) -> list[str]:
    """The game paths of a split, in upstream's order (task-type groups as listed, then file order)."""
    if split not in SPLIT_FILES:
        raise DataError(f"Unknown ALFWorld split {split!r}; choose one of {sorted(SPLIT_FILES)}.")
    groups = data.json(f"data/alfworld/{SPLIT_FILES[split]}")
    return [path for paths in groups.values() for path in paths]


@dataclass(frozen=True)
class _Logic:
    domain: str
    grammar: str


class GameStore:
    """Generates, validates and caches the games of one data root."""

    def __init__(self, data: DataRoot, *, seed: int = 0, cache_dir: Path | None = None) -> None:
        """Set up the store.

        Args:
            data: The data root (split lists and ``data/alfworld/logic/alfred.{pddl,twl2}``).
            seed: Base seed of the generator; the same seed gives the same games.
            cache_dir: Where games are kept; defaults to ``$AGENTRL_CACHE_DIR/alfworld/games``.
        """
        self.data = data
        self.seed = seed
        self._root = cache_dir or resolve_cache_dir() / "alfworld" / "games"
        self._engines: dict[str, GameEngine] = {}
        self._lock = threading.Lock()

    @cached_property
    def logic(self) -> _Logic:
        """Upstream's 2.1.1 domain and grammar."""
        domain = self.data.file("data/alfworld/logic/alfred.pddl").read_text(encoding="utf-8")
        grammar = self.data.file("data/alfworld/logic/alfred.twl2").read_text(encoding="utf-8")
        if _UNKNOWN_GOAL not in grammar:
            raise DataError(f"data/alfworld/logic/alfred.twl2 has no {_UNKNOWN_GOAL!r} placeholder for the task.")
        return _Logic(domain, grammar)

    @cached_property
    def directory(self) -> Path:
        """This store's cache folder (named by a hash of everything that shapes the games)."""
        digest = hashlib.sha256()
        versions = " ".join([GENERATOR_VERSION, metadata.version("alfworld"), metadata.version("textworld")])
        for part in (self.logic.domain, self.logic.grammar, versions, str(self.seed)):
            digest.update(part.encode("utf-8") + b"\0")
        path = self._root / digest.hexdigest()[:16]
        path.mkdir(parents=True, exist_ok=True)
        return path

    def file(self, path: str) -> Path:
        """Where the game of a split entry is cached."""
        return self.directory / (_slug(path) + ".tw-pddl")

    def cached(self, path: str) -> dict[str, Any] | None:
        """The game of a split entry if it is in the cache, else ``None``."""
        file = self.file(path)
        return json.loads(file.read_text(encoding="utf-8")) if file.is_file() else None

    def game(self, path: str) -> dict[str, Any]:
        """The game of a split entry: from the cache, or generated, validated and cached now.

        Raises:
            DataError: If no solvable game could be generated for the entry.
        """
        game = self.cached(path)
        if game is not None:
            return game
        file = self.file(path)
        with self._lock:
            if file.is_file():
                return json.loads(file.read_text(encoding="utf-8"))
            game = self.generate(parse_entry(path))
            _atomic_write(file, json.dumps(game))
        return game

    def generate(self, spec: GameSpec) -> dict[str, Any]:
        """Generate a solvable game for ``spec``, trying seeds until the expert's (or planner's) plan wins."""
        scene = load_scene(spec.scene)
        failures = []
        for attempt in range(MAX_ATTEMPTS):
            seed = _seed(self.seed, spec.path, attempt)
            problem = build_problem(spec, scene, seed)
            game = {
                "pddl_domain": self.logic.domain,
                "grammar": self.logic.grammar.replace(_UNKNOWN_GOAL, problem.sentence),
                "pddl_problem": problem.text,
                "solvable": False,
            }
            walkthrough, solver, why = self._solve(spec, problem, game)
            if walkthrough is not None:
                game.update(solvable=True, walkthrough=walkthrough, solver=solver, seed=seed, source=spec.path)
                return game
            failures.append(f"seed {seed}: {why}")
        raise DataError(f"No solvable ALFWorld game for {spec.path} after {MAX_ATTEMPTS} attempts: {failures}")

    def _solve(self, spec: GameSpec, problem: Problem, game: dict[str, Any]) -> tuple[list[str] | None, str, str]:
        """The expert's plan if replaying it wins, else fast-downward's; returns (plan, solver, why not)."""
        engine = self._engine_for("expert")
        try:
            state = engine.reset(game)
        except Exception as e:  # a generated problem the engine rejects is a generator bug: say which
            raise InfraError(f"The ALFWorld engine rejected a generated game: {e}") from e
        if state.won:
            return None, "", "won before any action"
        plan = expert_plan(spec, problem, engine.names)
        why = replay(engine, state, plan) if plan is not None else "the layout lacks what the task needs"
        if not why:
            return plan, "expert", ""
        logger.info("%s: the expert failed (%s); asking the planner", spec.path, why)
        planner = self._engine_for("planner")
        state = planner.reset(game)
        plan = planner.walkthrough
        why = replay(planner, state, plan) if plan else "the planner found no plan"
        return (plan, "planner", "") if not why else (None, "", why)

    def _engine_for(self, solver: str) -> GameEngine:
        if solver not in self._engines:
            self._engines[solver] = GameEngine(planner=solver == "planner")
        return self._engines[solver]


def replay(engine: GameEngine, state: EngineState, plan: list[str]) -> str:
    """Play ``plan`` from ``state``; returns why it does not win within the step limit ('' if it does)."""
    if len(plan) > MAX_PLAN_STEPS:
        return f"plan of {len(plan)} steps exceeds {MAX_PLAN_STEPS}"
    for number, command in enumerate(plan):
        if command not in state.admissible_commands:
            return f"plan step {number} {command!r} is not admissible"
        state = engine.step(command)
    return "" if state.won else "the replayed plan does not win"


def prepare_games(data: DataRoot, paths: list[str], *, workers: int = 1, seed: int = 0) -> int:
    """Generate (or find cached) the games of ``paths``, in ``workers`` processes; returns how many were made.

    Raises:
        DataError: If an entry has no solvable game.
    """
    store = GameStore(data, seed=seed)
    missing = list(dict.fromkeys(p for p in paths if not store.file(p).is_file()))
    if workers <= 1 or len(missing) <= 1:
        for path in missing:
            store.game(path)
        return len(missing)
    chunks = [missing[i::workers] for i in range(workers)]
    # Processes, not threads: generation is CPU-bound Python, and the translator holds a global lock.
    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_prepare_chunk, [str(data.path)] * workers, chunks, [seed] * workers))
    return len(missing)


def _prepare_chunk(data_root: str, paths: list[str], seed: int) -> None:
    store = GameStore(DataRoot.find(data_root), seed=seed)
    for path in paths:
        store.game(path)


def _seed(base: int, path: str, attempt: int) -> int:
    digest = hashlib.sha256(f"{base}|{path}|{attempt}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _slug(path: str) -> str:
    """A file name for a split entry (its task folder and trial id)."""
    parts = path.split("/")
    return "__".join(parts[-4:-1]) if len(parts) >= 4 else hashlib.sha256(path.encode()).hexdigest()


def _atomic_write(file: Path, text: str) -> None:
    """Write via a temporary file and rename, so concurrent readers never see half a game."""
    with tempfile.NamedTemporaryFile("w", dir=file.parent, delete=False, suffix=".tmp", encoding="utf-8") as f:
        f.write(text)
        tmp = f.name
    os.replace(tmp, file)
