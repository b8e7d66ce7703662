"""The Freebase ontology the KG task reads: which relations and attributes exist, their domains and ranges.

Upstream's API filters every relation list through ``ontology/vocab.json`` (``relations`` for
``get_relations``, ``attributes`` for ``get_attributes``), types new variables with the range of the
relation they were reached through (``ontology/fb_roles``), and Freebase stores most relations in both
directions (``ontology/reverse_properties``). The offline graph builder uses the same files to pick
type-consistent distractors.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from agentrl_envs.core.data import DataRoot

__all__ = ["Ontology", "load_ontology"]

ONTOLOGY_DIR = "data/knowledgegraph/ontology"


@dataclass(frozen=True)
class Ontology:
    """Freebase schema facts, read once per data root."""

    relations: frozenset[str]
    """Relations ``get_relations`` may show (vocab.json ``relations``)."""
    attributes: frozenset[str]
    """Numeric attributes ``get_attributes`` may show (vocab.json ``attributes``)."""
    domain: dict[str, str]
    """Relation -> the type of its subjects (fb_roles column 1)."""
    range: dict[str, str]
    """Relation -> the type of its objects (fb_roles column 3): the type of a new variable."""
    reverse: dict[str, str]
    """Relation -> the relation Freebase stores in the opposite direction."""
    by_domain: dict[str, tuple[str, ...]] = field(repr=False)
    """Type -> the vocabulary relations whose subjects have that type (sorted)."""
    supertypes: dict[str, tuple[str, ...]] = field(repr=False, default_factory=dict)
    """Type -> the types it is a subclass of (fb_types), sorted."""

    attributes_by_domain: dict[str, tuple[str, ...]] = field(repr=False, default_factory=dict)
    """Type -> the vocabulary attributes whose subjects have that type (sorted)."""
    _closure: dict[tuple[str, bool], tuple[str, ...]] = field(repr=False, default_factory=dict, compare=False)

    def relations_of(self, type_: str, *, attributes: bool = False) -> tuple[str, ...]:
        """Vocabulary relations (or attributes) an entity of ``type_`` can have: its own and its supertypes'."""
        key = (type_, attributes)
        if key not in self._closure:
            table = self.attributes_by_domain if attributes else self.by_domain
            found = list(table.get(type_, ()))
            for parent in self.supertypes.get(type_, ()):
                found += table.get(parent, ())
            self._closure[key] = tuple(dict.fromkeys(found))
        return self._closure[key]

    @property
    def fingerprint(self) -> str:
        """A short text that changes when the ontology does (for cache keys)."""
        return f"{len(self.relations)}/{len(self.attributes)}/{len(self.range)}/{len(self.reverse)}"


def load_ontology(data: DataRoot) -> Ontology:
    """Read the ontology files of a data root (cached per path)."""
    return _load(data.file(ONTOLOGY_DIR))


@cache
def _load(directory: Path) -> Ontology:
    vocab = DataRoot(directory.parents[2]).json(f"{ONTOLOGY_DIR}/vocab.json")
    domain: dict[str, str] = {}
    range_: dict[str, str] = {}
    with (directory / "fb_roles").open(encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3:  # one upstream line lacks its newline; upstream reads its first three fields too
                domain[fields[1]], range_[fields[1]] = fields[0], fields[2]
    reverse: dict[str, str] = {}
    with (directory / "reverse_properties").open(encoding="utf-8") as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) == 2:
                reverse[fields[0]] = fields[1]
    supertypes: dict[str, set[str]] = defaultdict(set)
    with (directory / "fb_types").open(encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3 and fields[0] != fields[2]:
                supertypes[fields[0]].add(fields[2])
    relations = frozenset(vocab["relations"])
    attributes = frozenset(vocab["attributes"])
    by_domain: dict[str, list[str]] = defaultdict(list)
    attributes_by_domain: dict[str, list[str]] = defaultdict(list)
    for name in relations | attributes:
        if name in domain:
            (by_domain if name in relations else attributes_by_domain)[domain[name]].append(name)
    return Ontology(
        relations=relations,
        attributes=attributes,
        domain=domain,
        range=range_,
        reverse=reverse,
        by_domain={t: tuple(sorted(rs)) for t, rs in by_domain.items()},
        supertypes={t: tuple(sorted(ps)) for t, ps in supertypes.items()},
        attributes_by_domain={t: tuple(sorted(rs)) for t, rs in attributes_by_domain.items()},
    )
