"""pass@k and the paper's inference-time cross-sampling (Fig. 8): the model (or agent) is drawn per turn."""

import itertools
import statistics
from pathlib import Path

import pytest

from agentrl_envs.eval import Evaluation, MixedAgent, OracleAgent, RandomAgent, TaskPlan
from agentrl_envs.eval.cli import main
from agentrl_envs.eval.report import pass_at_k, summarize

from .openai_server import FakeOpenAIServer
from .test_cli import read_outputs


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(4, 0, 1, 0.0), (4, 1, 1, 0.25), (4, 1, 2, 0.5), (4, 2, 2, 5 / 6), (4, 1, 4, 1.0), (4, 3, 2, 1.0), (5, 2, 3, 0.9)],
)
def test_pass_at_k_matches_a_hand_computation(n: int, c: int, k: int, expected: float) -> None:
    # e.g. n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6; n=5, c=2, k=3: 1 - C(3,3)/C(5,3) = 1 - 1/10
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_refuses_k_above_n() -> None:
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k(2, 1, 3)


def by_subsets(outcomes: list[bool], k: int) -> float:
    """pass@k by definition: the share of the k-subsets of the runs that hold a success."""
    subsets = list(itertools.combinations(outcomes, k))
    return sum(any(s) for s in subsets) / len(subsets)


def mixed_factory(weights: list[float]):
    def factory(task: str, split: str) -> MixedAgent:
        agents = [OracleAgent(task, split=split), RandomAgent(seed=1)]
        return MixedAgent(agents, ["oracle", "random"], weights=weights, seed=5)

    return factory


async def test_the_oracle_random_pair_picks_the_agent_per_turn(toy: str) -> None:
    runs = [Evaluation([TaskPlan(toy)], mixed_factory([1, 1]), concurrency=3, runs=4) for _ in range(2)]
    for evaluation in runs:
        await evaluation.run()
    first, second = ({r.key: [t.model for t in r.turns] for r in e.records} for e in runs)
    assert first == second  # seeded per episode: the same turns go to the same agent whatever the scheduling
    models = [m for turns in first.values() for m in turns]
    assert set(models) == {"oracle", "random"} and 0.3 < models.count("oracle") / len(models) < 0.7
    for record in runs[0].records:  # the oracle wins when it plays both of its moves
        if [t.model for t in record.turns] == ["oracle", "oracle"]:
            assert record.success
    results = summarize(runs[0].records, runs[0].planned_samples(), runs=4)
    assert results["turns_by_model"] == {"oracle": models.count("oracle"), "random": models.count("random")}
    figures = results["tasks"][toy]
    assert figures["pass_at_k"].keys() == {"1", "2", "4"}
    assert figures["pass_at_k"]["1"] == pytest.approx(figures["success_rate"])

    only_oracle = Evaluation([TaskPlan(toy)], mixed_factory([1, 0]), concurrency=3)
    assert all(r.success and {t.model for t in r.turns} == {"oracle"} for r in await only_oracle.run())


def test_two_models_on_two_servers_per_turn_with_pass_at_k(toy: str, tmp_path: Path, capsys) -> None:
    good, bad = FakeOpenAIServer(models=["good"]).start(), FakeOpenAIServer(models=["bad"]).start()
    try:
        argv = ["--tasks", toy, "--agent", "openai", "--runs", "4", "--output", str(tmp_path), "--seed", "3"]
        argv += ["--model", "good", "--base-url", good.base_url, "--model", "bad", "--base-url", bad.base_url]
        assert main([*argv, "--model-weights", "3,1"]) == 0
    finally:
        good.stop()
        bad.stop()
    results, episodes = read_outputs(tmp_path)
    turns = [t["model"] for e in episodes for t in e["turns"]]
    # Each turn went to its model's server, and only there.
    assert {r["model"] for r in good.requests} == {"good"} and {r["model"] for r in bad.requests} == {"bad"}
    assert (len(good.requests), len(bad.requests)) == (turns.count("good"), turns.count("bad"))
    assert results["turns_by_model"] == {"bad": turns.count("bad"), "good": turns.count("good")}
    assert 0.6 < turns.count("good") / len(turns) < 0.9  # weights 3:1
    # The stub's "bad" model answers a wrong number: an episode succeeds exactly when "good" played the answer.
    assert all(e["success"] == (e["turns"][-1]["model"] == "good") for e in episodes)
    outcomes = {i: [e["success"] for e in episodes if e["index"] == i] for i in range(5)}
    figures = results["tasks"][toy]
    for k in (1, 2, 4):
        expected = statistics.fmean(by_subsets(outcomes[i], k) for i in range(5))
        assert figures["pass_at_k"][str(k)] == pytest.approx(expected)
    assert figures["pass_at_k"]["4"] >= figures["pass_at_k"]["1"] == pytest.approx(figures["success_rate"])
    usage = results["usage"]
    assert usage["completion_tokens"] == 3 * len(turns) and usage["episodes"] == 20
    assert results["config"]["models"] == ["good", "bad"] and results["config"]["model_weights"] == [3.0, 1.0]
    assert results["config"]["base_urls"] == [good.base_url, bad.base_url]
    out = capsys.readouterr().out
    assert "pass@4" in out and f"turns by model: bad: {turns.count('bad')}, good: {turns.count('good')}" in out
