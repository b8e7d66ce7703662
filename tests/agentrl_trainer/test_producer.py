"""The rollout producer's admission rule: how many groups may be in flight before the trainer takes them."""

from __future__ import annotations

import itertools
import time
from typing import Any

from agentrl_trainer.engines.hf import HFEngine
from agentrl_trainer.rollout.cross_policy import EngineSampler
from agentrl_trainer.rollout.episode import EpisodeLimits
from agentrl_trainer.rollout.producer import RolloutProducer
from agentrl_trainer.staleness import StalenessRule
from agentrl_trainer.types import TrainingRow
from tests.agentrl_trainer.envs import LengthEnv


def _settled(read: Any, timeout_s: float = 60.0) -> int:
    """``read()`` once it has not changed for a second."""
    deadline = time.monotonic() + timeout_s
    last, since = read(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if (now := read()) != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 1.0:
            return last
    raise AssertionError(f"still changing after {timeout_s}s: {last}")


def _producer(model: Any, tokenizer: Any) -> tuple[RolloutProducer, HFEngine]:
    """Async groups of 2 short episodes, at most (S + 1) x B = 4 in flight by the staleness rule (S = 1, B = 2)."""
    engine = HFEngine(model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    producer = RolloutProducer(
        rows=(TrainingRow("length", "test", i % 3) for i in itertools.count()),
        env_factory=lambda task, split: LengthEnv(split=split),
        sampler=EngineSampler(engine),
        tokenizer=tokenizer,
        num_generations=2,
        limits=EpisodeLimits(max_turns=2, max_new_tokens=4, max_total_tokens=1024),
        queue_size=20,  # the slots do not bind here: the admission rule does
        staleness=StalenessRule(max_staleness=1),
        groups_per_version=2,
    )
    return producer, engine


def test_groups_the_trainer_takes_make_room_for_as_many_new_ones(model: Any, tokenizer: Any) -> None:
    """(S + 1) x B groups in flight at most; a step that takes more than B (the dynamic batch) lets as many start,
    without waiting for a new policy version."""
    producer, engine = _producer(model, tokenizer)
    producer.start()
    try:
        assert _settled(lambda: producer.started_groups) == 4  # (S + 1) x B, at version 0
        taken = producer.get_groups(3, 3, timeout_s=120)  # more than B, as a dynamic batch may take
        assert len(taken) == 3 and engine.version == 0
        assert _settled(lambda: producer.started_groups) == 7  # 3 taken, 3 started: 4 in flight again
    finally:
        producer.stop()


def test_no_group_starts_that_the_rest_of_the_run_could_not_train(model: Any, tokenizer: Any) -> None:
    """With the run's remaining budget set, the groups in flight never exceed it, whatever the staleness rule allows:
    rollouts past the last step would be played and thrown away."""
    producer, _ = _producer(model, tokenizer)  # the staleness rule alone would allow 4 in flight
    producer.groups_left = 3  # e.g. the last two steps of a run, the last one taking at most 1
    producer.start()
    try:
        assert _settled(lambda: producer.started_groups) == 3
        assert len(producer.get_groups(2, 2, timeout_s=120)) == 2
        producer.groups_left = 1  # what the trainer sets after taking them
        assert _settled(lambda: producer.started_groups) == 3  # the one in flight is all the last step can take
        producer.groups_left = None  # no end: the staleness rule alone decides again
        assert _settled(lambda: producer.started_groups) == 6  # 2 taken, 4 in flight
    finally:
        producer.stop()
