"""The ``sparql`` backend against a real Virtuoso 7.2.5 loaded with the offline graphs.

Both backends must give the same observations, rewards and scores on every test sample: for the oracle
(both rule sets) and for two seeded agents that wander off the gold path (random tools; deep programs with
superlatives, counts and intersections), so wrong paths and rejected queries are compared too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import InfraError
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.tasks.kg.backends import SparqlBackend
from agentrl_envs.tasks.kg.build import load_offline_graphs
from agentrl_envs.tasks.kg.env import KGEnv
from agentrl_envs.tasks.kg.program import QueryError, compile_program
from agentrl_envs.tasks.kg.virtuoso import VirtuosoConfig, VirtuosoServer

from .random_agent import ExplorerKGAgent, RandomKGAgent, play

pytestmark = pytest.mark.slow

SPLITS = ("test", "dev")


@pytest.fixture(scope="module")
def virtuoso(data_root) -> Iterator[VirtuosoServer]:
    """A private Virtuoso on 127.0.0.1:18111 (ISQL) and :18190 (HTTP), loaded with the test and dev graphs."""
    with VirtuosoServer(VirtuosoConfig(isql_port=18111, http_port=18190)) as server:
        for split in SPLITS:
            server.load(split, load_offline_graphs(DataRoot(data_root), split).graphs)
        yield server
    assert not server.running


def transcript(env: KGEnv, agent: Any, index: int) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
    reward, messages, info = play(env, agent, index)
    return reward, messages, {k: info.get(k) for k in ("status", "score", "answer", "num_answers", "error")}


def oracle_transcript(env: KGEnv, oracle: Any, index: int) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
    observation, _ = env.reset(options={"index": index})
    oracle.begin(index)
    seen, done, reward, info = list(observation), False, 0.0, {}
    while not done:
        observation, reward, terminated, truncated, info = env.step(oracle.act(observation))
        seen += observation
        done = terminated or truncated
    return reward, seen, {k: info.get(k) for k in ("status", "score", "answer", "num_answers", "error")}


@pytest.mark.parametrize("rules", ["upstream", "lenient"])
def test_oracle_is_identical_on_both_backends(virtuoso: VirtuosoServer, rules: str) -> None:
    local, remote = KGEnv(split="test", rules=rules), KGEnv(split="test", rules=rules, sparql_url=virtuoso.url)
    assert remote.reset(options={"index": 0})[1]["backend"] == "sparql"
    oracle = load_oracle("kg", split="test")
    wins = 0
    for index in range(150):
        expected = oracle_transcript(local, oracle, index)
        assert oracle_transcript(remote, oracle, index) == expected, f"sample {index}"
        wins += expected[0] == 1.0
    assert wins == (135 if rules == "upstream" else 148)
    remote.close()


@pytest.mark.parametrize("agent_kind", ["random", "explorer"])
def test_wandering_agents_see_the_same_on_both_backends(virtuoso: VirtuosoServer, agent_kind: str) -> None:
    local, remote = KGEnv(split="test"), KGEnv(split="test", sparql_url=virtuoso.url)
    make = (lambda: RandomKGAgent(seed=7)) if agent_kind == "random" else (lambda: ExplorerKGAgent(seed=7))
    steps = 0
    for index in range(150):
        expected = transcript(local, make(), index)
        assert transcript(remote, make(), index) == expected, f"sample {index}"
        steps += len(expected[1])
    assert steps > 150 * 10  # the agents really played
    remote.close()


def test_dev_split_oracle_with_answer_tool(virtuoso: VirtuosoServer) -> None:
    env = KGEnv(split="dev", answer_tool=True, sparql_url=virtuoso.url)
    oracle = load_oracle("kg", split="dev", answer_tool=True)
    rewards = [oracle_transcript(env, oracle, index)[0] for index in range(20)]
    assert sum(rewards) == 18  # as in process: dev 4 and 19 intersect two types
    env.close()


def test_endpoint_rejects_what_upstream_cannot_express(virtuoso: VirtuosoServer) -> None:
    backend = SparqlBackend(virtuoso.url, default_graph="urn:agentrl:kg:test:0")
    with pytest.raises(QueryError):  # COUNT over ARGMAX: upstream's text has unbalanced braces
        backend.execute(compile_program("(COUNT (ARGMIN (JOIN r.a_inv m.1) r.size))"))
    with pytest.raises(QueryError):  # the relations of a COUNT variable: its subquery selects no ?x
        backend.member_relations(compile_program("(COUNT (JOIN r.a_inv m.1))"))
    assert backend.execute(compile_program("(COUNT (JOIN r.a_inv m.1))")) == ["0"]
    backend.close()


def test_unreachable_endpoint_is_an_infra_error() -> None:
    backend = SparqlBackend("http://127.0.0.1:18199/sparql", timeout_s=2.0)
    with pytest.raises(InfraError, match="unreachable"):
        backend.out_relations("m.0")
    env = KGEnv(split="dev", sparql_url="http://127.0.0.1:18199/sparql")
    env.reset(options={"index": 0})
    function = {"name": "get_relations", "arguments": json.dumps({"variable": "m.0"})}
    call = {"id": "c", "type": "function", "function": function}
    _, reward, terminated, truncated, info = env.step({"role": "assistant", "content": None, "tool_calls": [call]})
    assert info["infra_error"] and (terminated or truncated) and reward == 0.0


def test_virtuoso_backend_starts_loads_and_stops_its_own_server() -> None:
    env = KGEnv(split="dev", backend="virtuoso")
    oracle = load_oracle("kg", split="dev")
    first = oracle_transcript(env, oracle, 0)
    assert env.reset(options={"index": 0})[1]["fidelity"] == "upstream"
    server = env._virtuoso
    assert server is not None and server.running and server.url != "http://127.0.0.1:18190/sparql"
    assert first == oracle_transcript(KGEnv(split="dev"), oracle, 0) and first[0] == 1.0
    env.close()
    assert not server.running


def test_lenient_oracle_on_train_gives_the_same_rewards_on_virtuoso(virtuoso: VirtuosoServer, data_root) -> None:
    """Every 16th train sample and every unreachable one (all 1214 take minutes on Virtuoso here)."""
    graphs = load_offline_graphs(DataRoot(data_root), "train")
    virtuoso.load("train", graphs.graphs)
    local = KGEnv(split="train", rules="lenient")
    remote = KGEnv(split="train", rules="lenient", sparql_url=virtuoso.url)
    oracle = load_oracle("kg", split="train")
    indices = sorted(set(range(0, 1214, 16)) | set(graphs.unreachable))
    for index in indices:
        expected = oracle_transcript(local, oracle, index)
        assert oracle_transcript(remote, oracle, index)[::2] == expected[::2], f"sample {index}"  # reward, info
        assert expected[0] == (0.0 if index in graphs.unreachable else 1.0), f"sample {index}"
    remote.close()
