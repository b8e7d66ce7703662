"""BFCL's multi-turn categories and their samples, read from the extracted wheel.

A sample is BFCL's prompt entry (``BFCL_v4_multi_turn_<category>.json``: the user turns, the backends'
initial state, the classes involved, and for ``miss_func`` the functions held back until a turn) joined
with its ground truth (``possible_answer/``: the call strings of each turn). Function docs come from
``multi_turn_func_doc/`` per class, in BFCL's order; held-back functions are removed from the first
turn's list and added at their turn, as BFCL's ``populate_test_cases_with_predefined_functions`` does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from agentrl_envs.core.errors import DataError, EnvError

__all__ = ["CATEGORIES", "BFCLCategory", "BFCLSample", "function_docs", "load_samples"]

_DATA = Path("bfcl_eval") / "data"


@dataclass(frozen=True)
class BFCLCategory:
    """One BFCL multi-turn category and our names for it."""

    name: str
    """BFCL's category name: ``multi_turn_base``."""
    short_name: str
    """Our task short name: ``bfcl_base`` (its env id is in :data:`agentrl_envs.core.registry.TASKS`)."""
    title: str
    """BFCL's column title on its leaderboard: ``Base``."""


CATEGORIES: dict[str, BFCLCategory] = {
    c.short_name: c
    for c in (
        BFCLCategory("multi_turn_base", "bfcl_base", "Base"),
        BFCLCategory("multi_turn_miss_func", "bfcl_miss_func", "Miss Func"),
        BFCLCategory("multi_turn_miss_param", "bfcl_miss_param", "Miss Param"),
        BFCLCategory("multi_turn_long_context", "bfcl_long_context", "Long Context"),
    )
}
"""The four multi-turn categories of BFCL's leaderboard, keyed by short name."""


@dataclass(frozen=True)
class BFCLSample:
    """One multi-turn entry with its ground truth."""

    id: str
    turns: list[list[dict[str, Any]]]
    """The user messages of each turn; an empty turn is where held-back functions arrive (``miss_func``)."""
    entry: dict[str, Any]
    """BFCL's prompt entry as its checker takes it (``id``, ``initial_config``, ``involved_classes``)."""
    ground_truth: list[list[str]]
    """The call strings of each turn."""
    missed_function: dict[int, list[str]] = field(default_factory=dict)
    """Turn index -> names of the functions revealed at that turn."""

    @property
    def involved_classes(self) -> list[str]:
        """The backend classes of the sample (``GorillaFileSystem``...)."""
        return list(self.entry["involved_classes"])


def load_samples(root: Path, category: BFCLCategory) -> list[BFCLSample]:
    """The category's samples in BFCL's order.

    Raises:
        DataError: If the files are missing or prompts and answers do not line up.
    """
    return _load_samples(root.resolve(), category.name)


@cache
def _load_samples(root: Path, name: str) -> list[BFCLSample]:
    prompts = _read_lines(root / _DATA / f"BFCL_v4_{name}.json")
    answers = _read_lines(root / _DATA / "possible_answer" / f"BFCL_v4_{name}.json")
    if [p["id"] for p in prompts] != [a["id"] for a in answers]:
        raise DataError(f"BFCL {name}: the prompt and possible-answer files list different ids.")
    samples = []
    for prompt, answer in zip(prompts, answers, strict=True):
        missed = {int(turn): list(names) for turn, names in prompt.get("missed_function", {}).items()}
        entry = {key: prompt[key] for key in ("id", "initial_config", "involved_classes")}
        samples.append(BFCLSample(prompt["id"], prompt["question"], entry, answer["ground_truth"], missed))
    return samples


def function_docs(root: Path, file_names: dict[str, str], sample: BFCLSample) -> tuple[list[dict], dict[int, list]]:
    """The function docs offered from the first turn, and those revealed at later turns.

    Args:
        root: The extracted BFCL tree.
        file_names: BFCL's ``MULTI_TURN_FUNC_DOC_FILE_MAPPING`` (class -> doc file).
        sample: The sample.

    Returns:
        ``(docs, revealed)``: the first turn's docs, and turn index -> docs added at that turn.
    """
    docs: list[dict[str, Any]] = []
    for class_name in sample.involved_classes:
        if class_name not in file_names:
            raise EnvError(f"BFCL sample {sample.id} involves {class_name!r}, which has no function docs.")
        docs += _read_lines(root.resolve() / _DATA / "multi_turn_func_doc" / file_names[class_name])
    docs = [dict(doc) for doc in docs]
    revealed: dict[int, list[dict[str, Any]]] = {}
    for turn, names in sorted(sample.missed_function.items()):
        revealed[turn] = []
        for name in names:
            position = next((i for i, doc in enumerate(docs) if doc["name"] == name), None)
            if position is None:
                raise DataError(f"BFCL sample {sample.id} holds back {name!r}, which none of its classes has.")
            revealed[turn].append(docs.pop(position))
    return docs, revealed


@cache
def _read_lines_cached(path: Path) -> tuple[dict[str, Any], ...]:
    if not path.is_file():
        raise DataError(f"BFCL file missing: {path}; fetch the data with `python -m agentrl_envs.tasks.bfcl.fetch`.")
    with path.open(encoding="utf-8") as f:
        return tuple(json.loads(line) for line in f if line.strip())


def _read_lines(path: Path) -> list[dict[str, Any]]:
    """A BFCL JSON-lines file (its ``.json`` files hold one object per line)."""
    return list(_read_lines_cached(path))
