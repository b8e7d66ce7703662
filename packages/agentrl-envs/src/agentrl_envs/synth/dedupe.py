"""Near-duplicate detection against the evaluation splits: word n-gram overlap on question and schema.

A task's **text** is its question plus its schema, lower-cased and split into words: DB the description,
table name and column names; OS the description and its init script; KG the question, the entity names and
the relations of its program. Two texts are compared by the Jaccard similarity of their word 3-gram sets
(texts under three words use their words). A candidate whose similarity to any ``test`` or ``dev`` sample
reaches :data:`THRESHOLD` is dropped as ``near_duplicate``; one that repeats an earlier candidate of the
same run exactly is dropped as ``duplicate``, and one that repeats a task of an excluded file (``synth
--exclude``: a training set the new tasks must not overlap, e.g. when they are held out) as ``excluded``;
exact repeats compare :func:`normalized` texts. Lookups go through an inverted index of n-grams, so a
candidate is compared only with the samples it shares an n-gram with.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentrl_envs.core.data import DataRoot

__all__ = ["N", "THRESHOLD", "OverlapIndex", "normalized", "read_samples", "reference_texts", "task_text", "texts_in"]

N = 3
THRESHOLD = 0.5
_WORD = re.compile(r"\w+")


def shingles(text: str, n: int = N) -> frozenset[tuple[str, ...]]:
    """The word n-grams of a text (its words, if it has fewer than ``n``)."""
    words = _WORD.findall(text.lower())
    if len(words) < n:
        return frozenset((w,) for w in words)
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def task_text(task: str, sample: dict[str, Any]) -> str:
    """The question-and-schema text of a sample (see the module docstring)."""
    if task == "db":
        table = sample.get("table")
        tables = table if isinstance(table, list) else [table or {}]
        schema = " ".join(
            " ".join(
                [str(t.get("table_name", ""))]
                + [str(c.get("name", "")) for c in t.get("table_info", {}).get("columns", [])]
            )
            for t in tables
        )
        return f"{sample.get('description', '')} {schema}"
    if task == "os":
        init = (sample.get("create") or {}).get("init") if isinstance(sample.get("create"), dict) else None
        init_text = init.get("code", "") if isinstance(init, dict) else (init if isinstance(init, str) else "")
        return f"{sample.get('description', '')} {init_text}"
    relations = " ".join(a.split(",", 1)[-1] for a in sample.get("actions", []) if "," in a)
    return f"{sample.get('question', '')} {' '.join(sample.get('entities', {}))} {relations}"


def normalized(text: str) -> str:
    """A task text with case and whitespace folded: the form exact repeats are compared in."""
    return " ".join(text.lower().split())


def read_samples(path: Path) -> list[dict[str, Any]]:
    """The samples of a task file in its upstream format: JSON lines (DB) or a JSON list (OS, KG)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def texts_in(task: str, paths: Iterable[Path]) -> frozenset[str]:
    """The :func:`normalized` texts of the samples of ``task``'s files at ``paths`` (one that is absent adds none)."""
    return frozenset(
        normalized(task_text(task, sample)) for path in paths if path.is_file() for sample in read_samples(path)
    )


def reference_texts(data: DataRoot, task: str) -> list[str]:
    """The texts of the task's ``test`` and ``dev`` samples, read raw from the data root."""
    if task == "db":
        rows = data.jsonl("data/dbbench/standard.jsonl") + data.jsonl("data/dbbench/dev.jsonl")
    elif task == "kg":
        rows = data.json("data/knowledgegraph/std.json") + data.json("data/knowledgegraph/dev.json")
    else:
        rows = _os_problems(data)
    return [task_text(task, row) for row in rows]


def _os_problems(data: DataRoot) -> list[dict[str, Any]]:
    files = sorted((data.path / "data/os_interaction/data").glob("[0-9]*/*.json"))
    files.append(data.path / "data/os_interaction/data/dev.json")
    problems: list[dict[str, Any]] = []
    for file in files:
        loaded = data.json(str(file.relative_to(data.path)))
        problems.extend(loaded if isinstance(loaded, list) else [loaded])
    return problems


class OverlapIndex:
    """The n-gram sets of reference texts, indexed for fast maximum-similarity lookups."""

    def __init__(self, texts: Iterable[str]) -> None:
        """Index ``texts``."""
        self.sets = [shingles(t) for t in texts]
        self.index: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for number, grams in enumerate(self.sets):
            for gram in grams:
                self.index[gram].append(number)

    def max_similarity(self, text: str) -> float:
        """The largest Jaccard similarity of ``text``'s n-grams with any indexed text (0 if none shares one)."""
        grams = shingles(text)
        candidates = {number for gram in grams for number in self.index.get(gram, ())}
        best = 0.0
        for number in candidates:
            other = self.sets[number]
            best = max(best, len(grams & other) / len(grams | other))
        return best
