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


def test_groups_the_trainer_takes_make_room_for_as_many_new_ones(model: Any, tokenizer: Any) -> None:
    """(S + 1) x B groups in flight at most; a step that takes more than B (the dynamic batch) lets as many start,
    without waiting for a new policy version."""
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
    producer.start()
    try:
        assert _settled(lambda: producer.started_groups) == 4  # (S + 1) x B, at version 0
        taken = producer.get_groups(3, 3, timeout_s=120)  # more than B, as a dynamic batch may take
        assert len(taken) == 3 and engine.version == 0
        assert _settled(lambda: producer.started_groups) == 7  # 3 taken, 3 started: 4 in flight again
    finally:
        producer.stop()
