"""The KG generator: deterministic per seed; kept programs solved by the oracle on their built subgraphs,
and a program the API cannot follow is dropped."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

from agentrl_envs.core.data import DataRoot
from agentrl_envs.synth.kg import KGAdapter, KGGenerator
from agentrl_envs.synth.pipeline import synthesize
from agentrl_envs.synth.types import Candidate
from agentrl_envs.synth.validate import validate
from agentrl_envs.tasks.kg.data import load_samples


def test_generation_is_deterministic_per_seed(data: DataRoot) -> None:
    def draw(seed: int) -> list[dict]:
        return [c.sample for c in islice(KGGenerator(data, seed=seed).candidates(3), 6)]

    assert draw(4) == draw(4)
    assert draw(4) != draw(5)


def test_a_run_keeps_only_tasks_the_env_validates(data: DataRoot, tmp_path: Path) -> None:
    out = tmp_path / "kg.json"
    result = synthesize(
        KGAdapter(data), KGGenerator(data, seed=2), name="procedural", n=9, difficulties=(1, 2, 3), out=out
    )
    assert result.counts.kept == 9 and result.counts.oracle_success == 1.0
    samples = load_samples(data, "train", out)
    levels = [raw["difficulty"] for raw in json.loads(out.read_text())]
    assert levels == [1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert {a.name for s in samples[:3] for a in s.actions} == {"get_relations", "get_neighbors"}
    assert all(not s.answers & set(s.entities.values()) for s in samples)


def test_validation_drops_a_program_the_api_refuses(data: DataRoot) -> None:
    good, bad = (c.sample for c in islice(KGGenerator(data, seed=0).candidates(1), 2))
    entity = next(iter(bad["entities"].values()))
    bad["actions"] = [f"get_relations({entity})", f"get_neighbors({entity},no.such.relation)"]
    verdicts = validate(
        KGAdapter(data), [Candidate("kg", "procedural", 1, good), Candidate("kg", "procedural", 1, bad)]
    )
    assert verdicts[0] is None
    assert verdicts[1] is not None and verdicts[1].reason == "oracle_failed"
