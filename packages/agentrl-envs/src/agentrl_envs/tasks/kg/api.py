"""The seven KG tools over a backend, with upstream's rules and observation strings.

One :class:`KGApi` serves one episode. It keeps the variables the agent created and, per variable, the
relations and attributes it was shown: ``get_neighbors`` only follows a relation that ``get_relations``
listed for that variable, ``argmax``/``argmin`` only use an attribute ``get_attributes`` listed, and
``intersection`` needs two variables of the same type. Observations are upstream's strings; rule
violations raise :class:`ToolError` with upstream's texts, which the env wraps as upstream does
(``Error processing tool call: ...``). Relation lists are sorted (upstream prints a Python set, whose
order changes from run to run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from agentrl_envs.tasks.kg.backends import KGBackend
from agentrl_envs.tasks.kg.build import FALLBACK_TYPE
from agentrl_envs.tasks.kg.ontology import Ontology
from agentrl_envs.tasks.kg.program import (
    QueryError,
    Variable,
    and_program,
    compile_program,
    count_program,
    join_program,
    superlative_program,
)

__all__ = ["EXTRA_ATTRIBUTES", "KGApi", "Rules", "ToolError", "ToolResult"]

Rules = Literal["upstream", "lenient"]
"""``upstream``: upstream's checks exactly. ``lenient``: the relaxations the gold programs need (see docs)."""

EXTRA_ATTRIBUTES = frozenset({"topic_server.population_number"})
"""Numeric properties upstream's ``logic_form_util`` knows but ``vocab.json`` lacks; ``lenient`` offers them."""

_UPSTREAM_ENTITY = re.compile(r"^([mf])\.[\w_]+$")
_LENIENT_ENTITY = re.compile(r"^\w+\.[\w.]+$")


class ToolError(ValueError):
    """A tool call that breaks a rule; the message is what the agent is shown."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What one tool call produced: the observation text and, for some tools, a new variable."""

    observation: str
    variable: Variable | None = None


@dataclass
class KGApi:
    """One episode's tools (see the module docstring)."""

    backend: KGBackend
    ontology: Ontology
    rules: Rules = "upstream"
    variables: list[Variable] = field(default_factory=list)
    relations_seen: dict[str, list[str]] = field(default_factory=dict)
    attributes_seen: dict[str, list[str]] = field(default_factory=dict)

    # ----------------------------------------------------------------- the seven tools

    def get_relations(self, variable: Variable | str) -> ToolResult:
        """The relations leaving the entity or the members of the variable."""
        self._require_node(variable, "get_relations")
        if isinstance(variable, Variable):
            found = self._member_relations(variable, "get_relations")
        else:
            found = self.backend.out_relations(variable)
        relations = sorted(r for r in found if self._is_relation(r))
        self.relations_seen[str(variable)] = relations
        return ToolResult(f"Observation: [{', '.join(relations)}]")

    def get_neighbors(self, variable: Variable | str, relation: str) -> ToolResult:
        """A new variable: what ``relation`` leads to from ``variable``."""
        self._require_node(variable, "get_neighbors")
        if relation not in self.relations_seen.get(str(variable), ()):
            raise ToolError("get_neighbors: relation must be a relation of the variable")
        type_ = self.ontology.range.get(relation)
        if type_ is None:
            if self.rules == "upstream":
                raise ToolError(f"get_neighbors: the ontology gives relation {relation} no range type")
            type_ = FALLBACK_TYPE
        return self._new(Variable(type_, join_program(relation, variable)))

    def intersection(self, variable1: Variable | str, variable2: Variable | str) -> ToolResult:
        """A new variable: the members of both."""
        if not isinstance(variable1, Variable) or not isinstance(variable2, Variable):
            raise ToolError("intersection: variable must be a variable")
        if variable1.type != variable2.type and self.rules == "upstream":
            raise ToolError("intersection: two variables must have the same type")
        return self._new(Variable(variable1.type, and_program(variable1, variable2)))

    def get_attributes(self, variable: Variable | str) -> ToolResult:
        """The numeric attributes of the variable's members."""
        variable = self._require_variable(variable, "get_attributes")
        found = self._member_relations(variable, "get_attributes")
        attributes = sorted(a for a in found if self._is_attribute(a))
        self.attributes_seen[variable.program] = attributes
        return ToolResult(f"Observation: [{', '.join(attributes)}]")

    def argmax(self, variable: Variable | str, attribute: str) -> ToolResult:
        """A new variable: the members with the largest value of ``attribute``."""
        return self._superlative("ARGMAX", variable, attribute)

    def argmin(self, variable: Variable | str, attribute: str) -> ToolResult:
        """A new variable: the members with the smallest value of ``attribute``."""
        return self._superlative("ARGMIN", variable, attribute)

    def count(self, variable: Variable | str) -> ToolResult:
        """A new variable: how many members the variable has."""
        variable = self._require_variable(variable, "count")
        return self._new(Variable("type.int", count_program(variable)), observation="which is a number")

    # ----------------------------------------------------------------- answers

    def answer(self, variable: Variable) -> list[str]:
        """The values the variable denotes, as upstream's ``final_execute`` returns them."""
        return self.backend.execute(compile_program(variable.program))

    # ----------------------------------------------------------------- internals

    def _superlative(self, kind: Literal["ARGMAX", "ARGMIN"], variable: Variable | str, attribute: str) -> ToolResult:
        name = kind.lower()
        variable = self._require_variable(variable, name)
        if attribute not in self.attributes_seen.get(variable.program, ()):
            raise ToolError(f"{name}: attribute must be an attribute of the variable")
        return self._new(Variable(variable.type, superlative_program(kind, variable, attribute)))

    def _member_relations(self, variable: Variable, tool: str) -> set[str]:
        """The relations of the variable's members; a query the knowledge base rejects is the agent's error.

        The wording does not depend on the backend (upstream shows the endpoint's own error text), so both
        backends give the same observation.
        """
        try:
            return self.backend.member_relations(compile_program(variable.program))
        except QueryError as e:
            raise ToolError(f"{tool}: the knowledge base cannot evaluate variable {self._name(variable)}") from e

    def _name(self, variable: Variable) -> str:
        return next((f"#{i}" for i, v in enumerate(self.variables) if v == variable), variable.program)

    def _new(self, variable: Variable, observation: str = "") -> ToolResult:
        """Register a new variable; its observation names it ``#<index>``."""
        self.variables.append(variable)
        index = len(self.variables) - 1
        text = observation or f"which are instances of {variable.type}"
        return ToolResult(f"Observation: variable #{index}, {text}", variable)

    def _require_node(self, variable: Variable | str, tool: str) -> None:
        if isinstance(variable, Variable):
            return
        pattern = _UPSTREAM_ENTITY if self.rules == "upstream" else _LENIENT_ENTITY
        if not isinstance(variable, str) or not pattern.match(variable):
            raise ToolError(f"{tool}: variable must be a variable or an entity")

    def _require_variable(self, variable: Variable | str, tool: str) -> Variable:
        if not isinstance(variable, Variable):
            raise ToolError(f"{tool}: variable must be a variable (#k), not an entity")
        return variable

    def _is_relation(self, name: str) -> bool:
        if name in self.ontology.relations:
            return True
        return self.rules == "lenient" and not self._is_attribute(name)

    def _is_attribute(self, name: str) -> bool:
        return name in self.ontology.attributes or (self.rules == "lenient" and name in EXTRA_ATTRIBUTES)
