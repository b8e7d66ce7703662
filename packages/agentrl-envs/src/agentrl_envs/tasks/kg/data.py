"""The KG samples of each split, read from the data root.

``test`` is upstream's ``kg-std`` (``std.json``, 150 questions), ``train`` is ``kg-env_train``
(``kg_rl_all.json``, 1214) and ``dev`` is ``dev.json`` (20). Each sample has a question, the entities it
names (name -> Freebase id), the gold program as tool calls (``actions``) and the gold answer set.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl_envs.core.data import DataRoot, read_json
from agentrl_envs.core.errors import DataError

__all__ = ["SPLIT_FILES", "GoldAction", "KGSample", "load_samples", "parse_gold_action", "parse_sample", "split_source"]

SPLIT_FILES = {
    "test": "data/knowledgegraph/std.json",
    "dev": "data/knowledgegraph/dev.json",
    "train": "data/knowledgegraph/kg_rl_all.json",
}

_ACTION = re.compile(r"^\s*(\w+)\((.*)\)\s*$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class GoldAction:
    """One step of a gold program, e.g. ``get_neighbors(m.05t073s,biology.pedigreed_animal.breed)``."""

    name: str
    args: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KGSample:
    """One question of a split."""

    index: int
    question: str
    entities: dict[str, str]
    actions: tuple[GoldAction, ...]
    answers: frozenset[str]
    qid: str


def parse_gold_action(text: str) -> GoldAction:
    """Read a gold action string; arguments are comma-separated ids, variables or relation names."""
    match = _ACTION.match(text)
    if match is None:
        raise DataError(f"Unreadable gold action {text!r}; expected name(arg, ...).")
    args = tuple(a.strip() for a in match.group(2).split(",")) if match.group(2).strip() else ()
    return GoldAction(match.group(1), args)


def split_source(data: DataRoot, split: str, train_file: str | os.PathLike[str] | None = None) -> Path:
    """The file a split reads: ``train_file`` for ``train`` when given, else the data root's file.

    Raises:
        DataError: For an unknown split, a ``train_file`` with another split, or a missing file.
    """
    if split not in SPLIT_FILES:
        raise DataError(f"Unknown KG split {split!r}; choose one of {sorted(SPLIT_FILES)}.")
    if train_file is None:
        return data.file(SPLIT_FILES[split])
    if split != "train":
        raise DataError(f"train_file replaces the train split's questions; it cannot be used with split={split!r}.")
    path = Path(train_file)
    if not path.is_file():
        raise DataError(f"KG train_file {path} does not exist; it is a JSON list of samples like std.json's.")
    return path


def load_samples(data: DataRoot, split: str, train_file: str | os.PathLike[str] | None = None) -> list[KGSample]:
    """All samples of a split, in file order (index = position); ``train_file`` replaces ``train``'s file."""
    return [parse_sample(i, item) for i, item in enumerate(read_json(split_source(data, split, train_file)))]


def parse_sample(index: int, item: dict[str, Any]) -> KGSample:
    """One sample as stored in the split's JSON list.

    Raises:
        DataError: If a field is missing or an action is unreadable.
    """
    try:
        return KGSample(
            index=index,
            question=item["question"],
            entities=dict(item["entities"]),
            actions=tuple(parse_gold_action(a) for a in item["actions"]),
            answers=frozenset(a["answer_argument"] for a in item["answer"]),
            qid=item.get("qid", str(index)),
        )
    except (KeyError, TypeError) as e:
        raise DataError(f"KG sample {index} lacks a field ({e}); expected question, entities, actions, answer.") from e
