"""The offline knowledge graph: one small Freebase subgraph per sample, built from its gold program.

Full Freebase does not fit here, so each sample gets a graph on which its gold actions work:

1. **Gold path.** The gold actions are replayed into upstream's program tree. Going down from the root,
   every node is given the entities it must denote (the gold answers at the top, fresh ids below) and the
   edges that make it so: ``get_neighbors`` edges from the source entities, intersections whose two sides
   share exactly the gold members plus their own extra members, ``count`` sets of the gold size, and
   superlatives whose gold members hold the best attribute value and whose other members worse ones.
2. **Reverse edges.** Freebase stores most relations in both directions (``reverse_properties``); the
   reverse of every gold edge is added too, unless that changes the gold answer.
3. **Distractors.** Every entity on the gold path gets 2–4 more relations chosen from the ontology for its
   type (never one the gold program uses), each to a fresh neighbour that has a relation of its own, and
   members of superlative sets get extra numeric attributes. So an agent sees wrong paths, and most
   relations it is offered are not on the gold path.

The build is deterministic for a seed and cached under ``$AGENTRL_CACHE_DIR/kg``; each graph is checked
by running its gold program, and samples where no graph can reproduce the gold answer under upstream's
query semantics are recorded (see :attr:`OfflineGraphs.unreachable`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import random
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from agentrl_envs.core.data import DataRoot, resolve_cache_dir
from agentrl_envs.core.errors import DataError
from agentrl_envs.tasks.kg.data import KGSample, load_samples, split_source
from agentrl_envs.tasks.kg.graph import KGGraph, Literal, Term
from agentrl_envs.tasks.kg.ontology import Ontology, load_ontology
from agentrl_envs.tasks.kg.program import (
    Query,
    QueryError,
    Variable,
    and_program,
    compile_program,
    count_program,
    join_program,
    superlative_program,
)

__all__ = ["BUILDER_VERSION", "OfflineGraphs", "build_graph", "gold_program", "load_offline_graphs"]

logger = logging.getLogger(__name__)

BUILDER_VERSION = 1
FALLBACK_TYPE = "common.topic"
"""The type of a variable reached through a relation the ontology has no range for."""

_DATATYPES = {"type.int": "integer", "type.float": "float", "type.datetime": "dateTime"}


@dataclass
class _Node:
    """A node of a replayed gold program."""

    op: str
    variable: Variable
    relation: str = ""
    children: tuple[_Node, ...] = ()
    entity: str = ""


@dataclass
class OfflineGraphs:
    """The graphs of one split, with the build's bookkeeping."""

    split: str
    graphs: list[KGGraph]
    unreachable: dict[int, str] = field(default_factory=dict)
    """Sample index -> why no graph gives its gold program the gold answer."""
    build_s: float = 0.0


def gold_program(sample: KGSample, ontology: Ontology) -> _Node:
    """Replay a sample's gold actions into a program tree (the last variable is the answer).

    Raises:
        DataError: If the actions do not form a program (no variable, a bad reference).
    """
    variables: list[_Node] = []

    def resolve(arg: str) -> _Node:
        if arg.startswith("#"):
            try:
                return variables[int(arg[1:])]
            except (ValueError, IndexError) as e:
                raise DataError(f"KG sample {sample.index}: bad variable {arg!r} in its gold actions.") from e
        entity = sample.entities.get(arg, arg)
        return _Node("ENTITY", Variable("", entity), entity=entity)

    for action in sample.actions:
        if action.name == "get_neighbors":
            source, relation = resolve(action.args[0]), action.args[1]
            var = Variable(ontology.range.get(relation, FALLBACK_TYPE), join_program(relation, source.variable))
            variables.append(_Node("JOIN", var, relation, (source,)))
        elif action.name == "intersection":
            a, b = resolve(action.args[0]), resolve(action.args[1])
            variables.append(_Node("AND", Variable(a.variable.type, and_program(a.variable, b.variable)), "", (a, b)))
        elif action.name == "count":
            a = resolve(action.args[0])
            variables.append(_Node("COUNT", Variable("type.int", count_program(a.variable)), "", (a,)))
        elif action.name in ("argmax", "argmin"):
            a, attribute = resolve(action.args[0]), action.args[1]
            kind = "ARGMAX" if action.name == "argmax" else "ARGMIN"
            program = superlative_program(kind, a.variable, attribute)
            variables.append(_Node(kind, Variable(a.variable.type, program), attribute, (a,)))
    if not variables:
        raise DataError(f"KG sample {sample.index}: its gold actions create no variable.")
    return variables[-1]


class _Builder:
    """Builds one sample's graph (see the module docstring)."""

    def __init__(self, sample: KGSample, ontology: Ontology, seed: int, split: str) -> None:
        self.sample = sample
        self.ontology = ontology
        self.rng = random.Random(f"agentrl-kg:{seed}:{split}:{sample.index}")
        self.graph = KGGraph()
        self.gold_edges: list[tuple[str, str, Term]] = []
        self.types: dict[str, str] = {}
        self.fresh_count = 0
        self.program_relations: set[str] = set()

    def fresh(self, n: int, type_: str) -> list[str]:
        ids = []
        for _ in range(n):
            self.fresh_count += 1
            ids.append(f"m.agentrl_{self.fresh_count:x}")
            self.types[ids[-1]] = type_
        return ids

    def edge(self, s: str, p: str, o: Term) -> None:
        self.graph.add(s, p, o)
        self.gold_edges.append((s, p, o))

    def assign(self, node: _Node, target: list[Term]) -> None:
        """Make ``node`` denote exactly ``target``."""
        for term in target:
            if isinstance(term, str):
                self.types.setdefault(term, node.variable.type)
        if node.op == "JOIN":
            self._join(node, target)
        elif node.op == "AND":
            for child in node.children:
                self.assign(child, target + self.fresh(self.rng.randint(0, 2), node.variable.type))
        elif node.op == "COUNT":
            child = node.children[0]
            self.assign(child, list(self.fresh(int(str(target[0])), child.variable.type)))
        elif node.op in ("ARGMAX", "ARGMIN"):
            self._superlative(node, target)

    def _join(self, node: _Node, target: list[Term]) -> None:
        source = node.children[0]
        if source.op == "ENTITY":
            self.types.setdefault(source.entity, self.ontology.domain.get(node.relation, FALLBACK_TYPE))
            for term in target:
                self.edge(source.entity, node.relation, term)
            return
        k = 1 if len(target) <= 1 else self.rng.randint(1, min(3, len(target)))
        members = self.fresh(k, source.variable.type)
        shuffled = list(target)
        self.rng.shuffle(shuffled)
        for i, term in enumerate(shuffled):
            self.edge(members[i % k], node.relation, term)
        self.assign(source, list(members))

    def _superlative(self, node: _Node, target: list[Term]) -> None:
        child, attribute = node.children[0], node.relation
        others = self.fresh(self.rng.randint(1, 3), child.variable.type)
        datatype = _DATATYPES.get(self.ontology.range.get(attribute, ""), "integer")
        best = self.rng.randint(1950, 2010) if datatype == "dateTime" else self.rng.randint(100, 10_000)
        sign = -1 if node.op == "ARGMAX" else 1
        for term in target:
            if isinstance(term, str):
                self.edge(term, attribute, _literal(best, datatype))
        for other in others:
            self.edge(other, attribute, _literal(best + sign * self.rng.randint(1, 40), datatype))
        self.assign(child, list(target) + list(others))

    def add_reverse_edges(self) -> None:
        for s, p, o in list(self.gold_edges):
            if isinstance(o, str) and p in self.ontology.reverse:
                self.graph.add(o, self.ontology.reverse[p], s)

    def add_distractors(self) -> None:
        used = set(self.program_relations)
        used |= {self.ontology.reverse[r] for r in self.program_relations if r in self.ontology.reverse}
        for node in sorted(
            {s for s, _, _ in self.gold_edges} | {o for _, _, o in self.gold_edges if isinstance(o, str)}
        ):
            self._distract(node, self.rng.randint(2, 4), used, second_hop=True)

    def _distract(self, node: str, n: int, used: set[str], *, second_hop: bool) -> None:
        type_ = self.types.get(node, FALLBACK_TYPE)
        candidates = [
            r
            for r in self.ontology.relations_of(type_)
            if r not in used and not self.ontology.range.get(r, "type.").startswith("type.")
        ]
        for relation in self.rng.sample(candidates, min(n, len(candidates))):
            (neighbour,) = self.fresh(1, self.ontology.range[relation])
            self.graph.add(node, relation, neighbour)
            if relation in self.ontology.reverse:
                self.graph.add(neighbour, self.ontology.reverse[relation], node)
            if second_hop:
                self._distract(neighbour, 1, used, second_hop=False)
        if second_hop and any(p in self.ontology.attributes for p in self.graph.out.get(node, {})):
            attributes = [a for a in self.ontology.relations_of(type_, attributes=True) if a not in used]
            for attribute in self.rng.sample(attributes, min(2, len(attributes))):
                self.graph.add(node, attribute, _literal(self.rng.randint(1, 5000), "integer"))


def build_graph(sample: KGSample, ontology: Ontology, *, seed: int = 0, split: str = "test") -> tuple[KGGraph, str]:
    """Build one sample's graph.

    Returns:
        The graph and ``""`` if its gold program yields the gold answer on it, else the reason why not.
    """
    root = gold_program(sample, ontology)
    program = compile_program(root.variable.program)
    reason = ""
    for with_reverse in (True, False):
        builder = _Builder(sample, ontology, seed, split)
        builder.program_relations = {
            a.args[1] for a in sample.actions if len(a.args) == 2 and not a.args[1].startswith("#")
        }
        builder.assign(root, sorted(sample.answers))
        if with_reverse:
            builder.add_reverse_edges()
        if not (reason := _check(builder.graph, program, sample)):
            break
    builder.add_distractors()
    return builder.graph, reason or _check(builder.graph, program, sample)


def _check(graph: KGGraph, query: Query, sample: KGSample) -> str:
    try:
        got = set(graph.execute(query))
    except QueryError as e:
        return f"gold program has no valid query: {e}"
    if got == set(sample.answers):
        return ""
    starts = [e for e in sample.answers if e in getattr(query, "entities", ())]
    if starts:
        return f"gold answer contains the start entity {starts[0]}, which upstream's query filters out"
    return f"gold program yields {len(got)} answers, not the {len(sample.answers)} gold ones"


def _literal(value: int, datatype: str) -> Literal:
    if datatype == "dateTime":
        return Literal(f"{value:04d}-01-01T00:00:00", "dateTime")
    if datatype == "float":
        return Literal(f"{value / 10:.1f}", "float")
    return Literal(str(value), "integer")


def load_offline_graphs(
    data: DataRoot, split: str, *, seed: int = 0, train_file: str | os.PathLike[str] | None = None
) -> OfflineGraphs:
    """The offline graphs of a split: from the cache, or built and cached (deterministic for ``seed``).

    ``train_file`` replaces the train split's questions (e.g. synthesized ones); its graphs are cached by
    the file's content like the data root's.
    """
    source = split_source(data, split, train_file).resolve()
    return _load(source, data.path, split, seed, source.stat().st_mtime_ns)


@cache
def _load(source: Path, root: Path, split: str, seed: int, mtime_ns: int) -> OfflineGraphs:
    data = DataRoot(root)
    ontology = load_ontology(data)
    digest = hashlib.sha256(source.read_bytes())
    digest.update(f"{BUILDER_VERSION}:{seed}:{ontology.fingerprint}".encode())
    path = resolve_cache_dir() / "kg" / f"graphs-{split}-{digest.hexdigest()[:16]}.json"
    if path.is_file():
        cached = json.loads(path.read_text(encoding="utf-8"))
        graphs = [KGGraph.from_json(rows) for rows in cached["graphs"]]
        unreachable = {int(k): v for k, v in cached["unreachable"].items()}
        return OfflineGraphs(split, graphs, unreachable, cached["build_s"])
    start = time.perf_counter()
    graphs, unreachable = [], {}
    for sample in load_samples(data, split, source if split == "train" else None):
        graph, reason = build_graph(sample, ontology, seed=seed, split=split)
        graphs.append(graph)
        if reason:
            unreachable[sample.index] = reason
    build_s = time.perf_counter() - start
    payload = {"graphs": [g.to_json() for g in graphs], "unreachable": unreachable, "build_s": build_s}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    tmp.replace(path)  # atomic, so concurrent workers never read half a file
    logger.info("built %d KG graphs for %s in %.1fs (%d unreachable)", len(graphs), split, build_s, len(unreachable))
    return OfflineGraphs(split, graphs, unreachable, build_s)
