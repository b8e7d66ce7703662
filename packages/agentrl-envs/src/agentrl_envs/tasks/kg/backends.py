"""Where KG queries run: the offline graph in process, or any SPARQL endpoint.

Both backends answer the same three questions that upstream's API asks, from the same compiled
:class:`~agentrl_envs.tasks.kg.program.Query`: the relations leaving an entity, the relations of a
variable's members, and the values a variable denotes. :class:`InProcessBackend` evaluates the query on
a :class:`~agentrl_envs.tasks.kg.graph.KGGraph`; :class:`SparqlBackend` sends upstream's SPARQL text to an
endpoint (a Virtuoso loaded with the offline graphs, or a real Freebase) with ``httpx``.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol

import httpx

from agentrl_envs.core.errors import InfraError
from agentrl_envs.tasks.kg.graph import KGGraph
from agentrl_envs.tasks.kg.program import NS, Query, QueryError, out_relations_sparql, relations_sparql

__all__ = ["OFFLINE_GRAPH_IRI", "InProcessBackend", "KGBackend", "SparqlBackend"]

logger = logging.getLogger(__name__)

OFFLINE_GRAPH_IRI = "urn:agentrl:kg:{split}:{index}"
"""The named graph that holds one sample's offline graph on a SPARQL endpoint (see :mod:`.virtuoso`)."""

# Virtuoso reports a query it cannot compile with HTTP 500 and an SQL state: 37xxx syntax, 42xxx semantics,
# S0xxx unknown column (e.g. ``?x`` of a COUNT subquery), 22xxx bad data.
_VIRTUOSO_ERROR = re.compile(r"^Virtuoso (\w{5}) Error")
_QUERY_STATES = ("37", "42", "S0", "22")


class KGBackend(Protocol):
    """The queries upstream's KG API makes."""

    name: str

    def out_relations(self, entity: str) -> set[str]:
        """The Freebase predicates leaving ``entity``."""
        ...

    def member_relations(self, query: Query) -> set[str]:
        """The predicates leaving any member of the variable ``query`` denotes."""
        ...

    def execute(self, query: Query) -> list[str]:
        """The values the query selects (a count as one number)."""
        ...


class InProcessBackend:
    """Answers queries on one sample's offline graph, in process."""

    name = "inprocess"

    def __init__(self, graph: KGGraph) -> None:
        """Serve ``graph``."""
        self.graph = graph

    def out_relations(self, entity: str) -> set[str]:
        """See :class:`KGBackend`."""
        return self.graph.out_relations(entity)

    def member_relations(self, query: Query) -> set[str]:
        """See :class:`KGBackend`."""
        return self.graph.member_relations(query)

    def execute(self, query: Query) -> list[str]:
        """See :class:`KGBackend`."""
        return self.graph.execute(query)


class SparqlBackend:
    """Sends upstream's SPARQL to an endpoint over HTTP.

    Args:
        url: The endpoint, e.g. ``http://127.0.0.1:8890/sparql``.
        default_graph: A graph IRI sent as ``default-graph-uri`` (one offline sample graph), or ``None`` to
            query the endpoint's default dataset (a real Freebase).
        timeout_s: Per-query timeout.
        client: An ``httpx.Client`` to reuse (connection pooling across episodes).
    """

    name = "sparql"

    def __init__(
        self,
        url: str,
        *,
        default_graph: str | None = None,
        timeout_s: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        """See the class docstring."""
        self.url = url
        self.default_graph = default_graph
        self.client = client or httpx.Client(timeout=timeout_s)

    def out_relations(self, entity: str) -> set[str]:
        """See :class:`KGBackend`."""
        return set(self.query(out_relations_sparql(entity)))

    def member_relations(self, query: Query) -> set[str]:
        """See :class:`KGBackend`."""
        return set(self.query(relations_sparql(query)))

    def execute(self, query: Query) -> list[str]:
        """See :class:`KGBackend`."""
        return self.query(query.sparql())

    def query(self, text: str) -> list[str]:
        """Run one single-column SELECT; values as upstream reports them (namespace and ``-08:00`` removed).

        Raises:
            QueryError: If the endpoint rejects the query (a program upstream cannot express).
            InfraError: If the endpoint cannot be reached or answers with a server error.
        """
        params = {"query": text, "format": "application/sparql-results+json"}
        if self.default_graph is not None:
            params["default-graph-uri"] = self.default_graph
        try:
            response = self.client.post(self.url, data=params, headers={"Accept": "application/sparql-results+json"})
        except httpx.HTTPError as e:
            raise InfraError(f"SPARQL endpoint {self.url} is unreachable ({type(e).__name__}: {e}).") from e
        if response.status_code >= 400:
            state = _VIRTUOSO_ERROR.match(response.text.strip())
            if response.status_code < 500 or (state and state.group(1).startswith(_QUERY_STATES)):
                raise QueryError(f"The endpoint rejected the query: {response.text.strip()[:300]}")
            raise InfraError(f"SPARQL endpoint {self.url} failed: HTTP {response.status_code} {response.text[:300]}")
        try:
            rows = response.json()["results"]["bindings"]
        except (ValueError, KeyError) as e:
            raise InfraError(f"SPARQL endpoint {self.url} sent no JSON results: {response.text[:300]}") from e
        values = []
        for row in rows:
            for binding in row.values():
                values.append(binding["value"].replace(NS, "").replace("-08:00", ""))
        return values

    def close(self) -> None:
        """Close the HTTP client."""
        self.client.close()
