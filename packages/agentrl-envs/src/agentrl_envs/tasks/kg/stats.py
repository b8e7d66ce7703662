"""Figures of the offline graphs: their size, and how many of the relations an agent is shown lead astray.

The gold actions are replayed with the real tools (``lenient`` rules, so every gold program runs); each
``get_relations``/``get_attributes`` list the gold program reads is compared with the relations the gold
program uses. ``bench/kg_graph.py`` prints these per split; ``docs/envs/kg.md`` records them.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.tasks.kg.api import KGApi, ToolError
from agentrl_envs.tasks.kg.backends import InProcessBackend
from agentrl_envs.tasks.kg.build import load_offline_graphs
from agentrl_envs.tasks.kg.data import load_samples
from agentrl_envs.tasks.kg.ontology import load_ontology
from agentrl_envs.tasks.kg.program import Variable

__all__ = ["GraphStats", "graph_stats"]


@dataclass(frozen=True)
class GraphStats:
    """Per-split figures (means are per sample, or per list shown)."""

    split: str
    samples: int
    unreachable: int
    """Samples whose gold answer no graph can give under upstream's query (see ``OfflineGraphs.unreachable``)."""
    triples_mean: float
    triples_max: int
    nodes_mean: float
    relations_listed_mean: float
    """Relations in one ``get_relations`` observation on the gold path."""
    relations_on_path_mean: float
    """Of those, relations the gold program uses."""
    off_path_share: float
    """Share of all listed relations that the gold program does not use."""
    attributes_listed_mean: float
    """Attributes in one ``get_attributes`` observation on the gold path."""

    def as_dict(self) -> dict[str, Any]:
        """The figures as a JSON-ready dict."""
        return asdict(self)


def graph_stats(data: DataRoot, split: str, *, seed: int = 0) -> GraphStats:
    """Measure the offline graphs of ``split`` (built or read from the cache)."""
    graphs = load_offline_graphs(data, split, seed=seed)
    ontology = load_ontology(data)
    listed: list[int] = []
    on_path: list[int] = []
    attributes: list[int] = []
    for sample, graph in zip(load_samples(data, split), graphs.graphs, strict=True):
        api = KGApi(InProcessBackend(graph), ontology, "lenient")
        gold = {a.args[1] for a in sample.actions if len(a.args) == 2 and not a.args[1].startswith("#")}

        for action in sample.actions:
            # The first argument is a node (entity name, id or #k); a second one a relation, or a #k.
            args = [
                _resolve(api, sample.entities, a) if i == 0 or a.startswith("#") else a
                for i, a in enumerate(action.args)
            ]
            try:
                result = getattr(api, action.name)(*args)
            except ToolError:
                continue
            names = [n for n in result.observation.removeprefix("Observation: [").rstrip("]").split(", ") if n]
            if action.name == "get_relations":
                listed.append(len(names))
                on_path.append(sum(n in gold for n in names))
            elif action.name == "get_attributes":
                attributes.append(len(names))
    sizes = [len(g) for g in graphs.graphs]
    return GraphStats(
        split=split,
        samples=len(sizes),
        unreachable=len(graphs.unreachable),
        triples_mean=round(statistics.fmean(sizes), 1),
        triples_max=max(sizes),
        nodes_mean=round(statistics.fmean(len(_nodes(g.triples())) for g in graphs.graphs), 1),
        relations_listed_mean=round(statistics.fmean(listed), 2),
        relations_on_path_mean=round(statistics.fmean(on_path), 2),
        off_path_share=round(1 - sum(on_path) / sum(listed), 3),
        attributes_listed_mean=round(statistics.fmean(attributes), 2) if attributes else 0.0,
    )


def _resolve(api: KGApi, entities: dict[str, str], arg: str) -> Variable | str:
    return api.variables[int(arg[1:])] if arg.startswith("#") else entities.get(arg, arg)


def _nodes(triples: Any) -> set[Any]:
    nodes: set[Any] = set()
    for s, _, o in triples:
        nodes.update((s, o))
    return nodes
