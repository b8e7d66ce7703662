"""A small in-memory RDF graph over Freebase ids, and the evaluation of compiled queries on it.

Nodes are Freebase ids (``m.0km5c``) or typed literals; edges are Freebase relations. The in-process
backend keeps one graph per sample and answers upstream's queries on it with the semantics the SPARQL
text has on a real endpoint: a conjunctive match of the triple patterns, ``DISTINCT ?x``, the entity and
language filters on ``?x``, ``COUNT``, and superlatives as upstream writes them (the best ``?sk0`` among the
filtered matches, then every match that has that value, unfiltered).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agentrl_envs.tasks.kg.program import NS, Pattern, Query, QueryError

__all__ = ["XSD", "KGGraph", "Literal", "Term"]

XSD = "http://www.w3.org/2001/XMLSchema#"


@dataclass(frozen=True, slots=True, order=True)
class Literal:
    """A typed literal (``datatype`` is an XSD local name: ``integer``, ``float``, ``dateTime``)."""

    lexical: str
    datatype: str = "string"
    lang: str = ""

    def sort_key(self) -> tuple[int, Any]:
        """SPARQL's ORDER BY for one datatype: numbers by value, dates by their ISO text."""
        if self.datatype in ("integer", "float", "double", "decimal"):
            return (0, float(self.lexical))
        return (1, self.lexical)

    def ntriples(self) -> str:
        """The literal in N-Triples syntax."""
        text = self.lexical.replace("\\", "\\\\").replace('"', '\\"')
        if self.lang:
            return f'"{text}"@{self.lang}'
        return f'"{text}"^^<{XSD}{self.datatype}>'


Term = str | Literal
"""A node: a Freebase id (an IRI under ``ns:``) or a literal."""


@dataclass
class KGGraph:
    """Triples indexed by subject and predicate."""

    out: dict[str, dict[str, dict[Term, None]]] = field(default_factory=dict)
    """subject -> predicate -> objects (a dict used as an insertion-ordered set)."""

    def add(self, subject: str, predicate: str, obj: Term) -> None:
        """Add one triple (duplicates are ignored)."""
        self.out.setdefault(subject, {}).setdefault(predicate, {})[obj] = None

    def triples(self) -> Iterator[tuple[str, str, Term]]:
        """Every triple, in insertion order."""
        for subject, predicates in self.out.items():
            for predicate, objects in predicates.items():
                for obj in objects:
                    yield subject, predicate, obj

    def __len__(self) -> int:
        return sum(len(objs) for preds in self.out.values() for objs in preds.values())

    # ----------------------------------------------------------------- (de)serialisation

    def to_json(self) -> list[list[str]]:
        """Triples as ``[s, p, o]`` (IRI object) or ``[s, p, lexical, datatype]`` (literal object)."""
        rows: list[list[str]] = []
        for s, p, o in self.triples():
            rows.append([s, p, o] if isinstance(o, str) else [s, p, o.lexical, o.datatype])
        return rows

    @classmethod
    def from_json(cls, rows: list[list[str]]) -> KGGraph:
        """Inverse of :meth:`to_json`."""
        graph = cls()
        for row in rows:
            graph.add(row[0], row[1], row[2] if len(row) == 3 else Literal(row[2], row[3]))
        return graph

    def ntriples(self) -> str:
        """The graph as N-Triples, Freebase ids under ``http://rdf.freebase.com/ns/``."""
        lines = []
        for s, p, o in self.triples():
            obj = f"<{NS}{o}>" if isinstance(o, str) else o.ntriples()
            lines.append(f"<{NS}{s}> <{NS}{p}> {obj} .")
        return "\n".join(lines) + "\n"

    # ----------------------------------------------------------------- queries

    def out_relations(self, entity: str) -> set[str]:
        """The predicates leaving ``entity``."""
        return set(self.out.get(entity, {}))

    def select(self, query: Query) -> list[Term]:
        """The distinct ``?x`` of a non-COUNT query (the members of a variable).

        Raises:
            QueryError: If upstream's text for the query is not valid SPARQL.
        """
        if query.malformed:
            raise QueryError(f"Malformed query: {query.malformed}.")
        if query.superlative is None:
            return _distinct(row["?x"] for row in self._matches(query) if _passes(row["?x"], query))
        rows = list(self._matches(query))
        ranked = [row["?sk0"] for row in rows if _passes(row["?x"], query) and isinstance(row["?sk0"], Literal)]
        if not ranked:
            return []
        best = (max if query.superlative == "ARGMAX" else min)(ranked, key=Literal.sort_key)
        return _distinct(row["?x"] for row in rows if row["?sk0"] == best)

    def execute(self, query: Query) -> list[str]:
        """What upstream's ``execute_query`` returns for the query: values as strings.

        Raises:
            QueryError: If upstream's text for the query is not valid SPARQL.
        """
        if query.count:
            if query.malformed:
                raise QueryError(f"Malformed query: {query.malformed}.")
            members = _distinct(row["?x"] for row in self._matches(query) if _passes(row["?x"], query))
            return [str(len(members))]
        return [_value(term) for term in self.select(query)]

    def member_relations(self, query: Query) -> set[str]:
        """Upstream's relations query: the predicates of every member of the variable.

        Raises:
            QueryError: Over a COUNT program (its subquery selects no ``?x``; endpoints reject the query) or a
                malformed one.
        """
        if query.count:
            raise QueryError("A COUNT variable has no members to list relations of.")
        relations: set[str] = set()
        for member in self.select(query):
            if isinstance(member, str):
                relations.update(self.out.get(member, {}))
        return relations

    def _matches(self, query: Query) -> Iterator[dict[str, Term]]:
        """Every solution of the query's triple patterns (a backtracking join; the graphs are small).

        Patterns are taken in an order where the subject is already known (a constant, or a variable an
        earlier pattern bound), so each step is an index lookup.
        """
        return self._extend({}, _plan(query.patterns), 0)

    def _extend(self, row: dict[str, Term], plan: list[Pattern], depth: int) -> Iterator[dict[str, Term]]:
        if depth == len(plan):
            yield dict(row)
            return
        pattern = plan[depth]
        subject = pattern.subject
        if subject.startswith("?"):
            subjects = [row[subject]] if subject in row else list(self.out)
        else:
            subjects = [subject]
        target = pattern.object
        is_var = target.startswith("?")
        for s in subjects:
            if not isinstance(s, str):
                continue
            objects = self.out.get(s, {}).get(pattern.predicate)
            if not objects:
                continue
            fresh_subject = subject.startswith("?") and subject not in row
            if fresh_subject:
                row[subject] = s
            if not is_var:
                if target in objects:
                    yield from self._extend(row, plan, depth + 1)
            elif target in row:
                if row[target] in objects:
                    yield from self._extend(row, plan, depth + 1)
            else:
                for obj in objects:
                    row[target] = obj
                    yield from self._extend(row, plan, depth + 1)
                del row[target]
            if fresh_subject:
                del row[subject]


def _plan(patterns: tuple[Pattern, ...]) -> list[Pattern]:
    """Order patterns so each one's subject is bound before it runs, where possible."""
    todo, bound, plan = list(patterns), set(), []
    while todo:
        pick = next((p for p in todo if not p.subject.startswith("?") or p.subject in bound), todo[0])
        todo.remove(pick)
        plan.append(pick)
        bound.update(t for t in (pick.subject, pick.object) if t.startswith("?"))
    return plan


def _passes(x: Term, query: Query) -> bool:
    """The filters upstream puts on ``?x``: English or untagged literals only, no starting entity."""
    if isinstance(x, Literal):
        return x.lang in ("", "en") or x.lang.startswith("en-")
    return x not in query.entities


def _distinct(terms: Iterator[Term]) -> list[Term]:
    return list(dict.fromkeys(terms))


def _value(term: Term) -> str:
    """As upstream's executor reports a binding: the id without the namespace, ``-08:00`` removed."""
    text = term if isinstance(term, str) else term.lexical
    return text.replace(NS, "").replace("-08:00", "")
