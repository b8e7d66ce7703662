from __future__ import annotations

import itertools
from collections import Counter

import pytest

from agentrl_trainer.rollout.cross_policy import EngineSampler
from agentrl_trainer.rows import mixed_rows, task_rows


def test_round_robin_mixes_tasks_and_covers_every_sample() -> None:
    rows = mixed_rows({"a": task_rows("a", "train", 3), "b": task_rows("b", "train", 2)}, seed=1)
    first = list(itertools.islice(rows, 12))
    assert [r.task for r in first] == ["a", "b"] * 6
    assert {r.index for r in first if r.task == "a"} == {0, 1, 2}


def test_weighted_mixing_follows_the_weights() -> None:
    rows = mixed_rows({"a": task_rows("a", "train", 3), "b": task_rows("b", "train", 3)}, weights=[3, 1], seed=0)
    counts = Counter(r.task for r in itertools.islice(rows, 4000))
    assert 0.72 < counts["a"] / 4000 < 0.78


class _Engine:
    def __init__(self, name: str) -> None:
        self.name = name
        self.version = 0
        self.updates: list[int] = []

    def update_weights(self, state_dict: object, version: int) -> None:
        self.version = version
        self.updates.append(version)


def test_sampler_sends_a_fraction_of_turns_to_lagged_engines_and_refreshes_them_every_k() -> None:
    policy, lagged = _Engine("policy"), _Engine("lagged0")
    sampler = EngineSampler(policy, [lagged], lagged_fraction=0.25, lagged_refresh_steps=3, seed=0)  # type: ignore[list-item]
    picks = Counter(sampler.pick().name for _ in range(4000))
    assert 0.22 < picks["lagged0"] / 4000 < 0.28
    for version in range(1, 8):
        sampler.update_weights({}, version)
    assert policy.updates == [1, 2, 3, 4, 5, 6, 7]
    assert lagged.updates == [3, 6]


def test_sampler_rejects_a_fraction_without_lagged_engines() -> None:
    with pytest.raises(ValueError, match="needs at least one lagged engine"):
        EngineSampler(_Engine("policy"), [], lagged_fraction=0.5)  # type: ignore[arg-type]
