"""The engine router: least outstanding requests, sticky trajectories, dead replicas routed around and counted."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import torch

from agentrl_envs.core import InfraError
from agentrl_trainer.engines import EngineRouter, ReplicaFailure
from agentrl_trainer.engines.hf import HFEngine
from agentrl_trainer.engines.protocol import RolloutEngine
from agentrl_trainer.rollout.cross_policy import EngineSampler
from agentrl_trainer.rollout.episode import EpisodeLimits
from agentrl_trainer.rollout.producer import RolloutProducer
from agentrl_trainer.rows import mixed_rows, task_rows
from agentrl_trainer.types import Generation
from tests.agentrl_trainer.envs import LengthEnv


class FakeReplica:
    """Answers after ``delay_s``; dies (connection refused) once ``die_after`` requests have started."""

    def __init__(self, name: str, delay_s: float = 0.01, die_after: int | None = None, token: int = 7) -> None:
        self.name = name
        self.token = token
        self.version = 0
        self.delay_s = delay_s
        self.die_after = die_after
        self.started = 0
        self.updates: list[int] = []

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        self.started += 1
        if self.die_after is not None and self.started > self.die_after:
            raise httpx.ConnectError("connection refused")
        await asyncio.sleep(self.delay_s)
        return Generation((self.token,), (-0.5,), self.version, self.name, "length")

    def update_weights(self, state_dict: Any, version: int) -> None:
        if self.die_after is not None and self.started >= self.die_after:
            raise httpx.ConnectError("connection refused")
        self.version = version
        self.updates.append(version)

    async def aclose(self) -> None:
        pass


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_the_router_is_a_rollout_engine_named_after_the_policy() -> None:
    router = EngineRouter([FakeReplica("a"), FakeReplica("b")], name="policy")
    assert isinstance(router, RolloutEngine)
    generation = _run(router.agenerate([1], max_new_tokens=1))
    assert generation.engine == "policy" and generation.token_ids == (7,)


def test_new_trajectories_go_to_the_replica_with_fewest_requests_in_flight() -> None:
    slow, fast = FakeReplica("slow", delay_s=0.3), FakeReplica("fast", delay_s=0.01)
    router = EngineRouter([slow, fast])

    async def main() -> None:
        first = asyncio.create_task(router.agenerate([1], max_new_tokens=1))  # lands on "slow" (index order)
        await asyncio.sleep(0.05)
        # While "slow" holds one request, every new trajectory (a task of its own) goes to "fast".
        for _ in range(5):
            await asyncio.create_task(router.agenerate([1], max_new_tokens=1))
        await first

    _run(main())
    assert router.served == [1, 5]


def test_concurrent_trajectories_are_spread_evenly() -> None:
    replicas = [FakeReplica(str(i), delay_s=0.05) for i in range(3)]
    router = EngineRouter(replicas)

    async def main() -> None:
        await asyncio.gather(*(router.agenerate([1], max_new_tokens=1) for _ in range(30)))

    _run(main())
    assert router.served == [10, 10, 10]


def test_every_turn_of_a_trajectory_stays_on_its_replica() -> None:
    replicas = [FakeReplica(str(i), delay_s=0.01, token=i) for i in range(3)]
    router = EngineRouter(replicas)

    async def episode() -> list[int]:
        # Each replica answers with its own index as the token, so the token says who served the turn.
        return [(await router.agenerate([1], max_new_tokens=1)).token_ids[0] for _ in range(4)]

    async def main() -> list[list[int]]:
        return await asyncio.gather(*(asyncio.create_task(episode()) for _ in range(6)))

    placements = _run(main())
    assert all(len(set(p)) == 1 for p in placements)  # sticky
    assert sorted(p[0] for p in placements) == [0, 0, 1, 1, 2, 2]  # and balanced across trajectories
    assert router.stats.sticky_hits == 6 * 3


def test_sticky_off_balances_every_turn() -> None:
    replicas = [FakeReplica(str(i), delay_s=0.0) for i in range(2)]
    router = EngineRouter(replicas, sticky=False)

    async def episode() -> None:
        for _ in range(4):
            await router.agenerate([1], max_new_tokens=1)

    _run(episode())
    assert router.served == [2, 2] and router.stats.sticky_hits == 0


def test_a_dead_replica_fails_the_request_as_an_infra_error_and_gets_no_more_traffic() -> None:
    dying, healthy = FakeReplica("dying", die_after=0), FakeReplica("healthy")
    router = EngineRouter([dying, healthy])
    with pytest.raises(ReplicaFailure, match="replica 0") as failure:
        _run(router.agenerate([1], max_new_tokens=1))
    assert isinstance(failure.value, InfraError)  # so the rollout loop retries the episode, never rewards it
    assert router.alive == [False, True]
    assert (router.stats.failed_requests, router.stats.dead_replicas) == (1, 1)
    for _ in range(3):
        _run(router.agenerate([1], max_new_tokens=1))
    assert router.served == [0, 3] and dying.started == 1


def test_with_every_replica_dead_requests_fail_fast() -> None:
    router = EngineRouter([FakeReplica("a", die_after=0)])
    with pytest.raises(ReplicaFailure):
        _run(router.agenerate([1], max_new_tokens=1))
    with pytest.raises(ReplicaFailure, match="are dead"):
        _run(router.agenerate([1], max_new_tokens=1))


def test_a_bad_request_is_the_callers_error_not_the_replicas() -> None:
    class Strict(FakeReplica):
        async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
            raise ValueError("max_new_tokens must be >= 1")

    router = EngineRouter([Strict("a")])
    with pytest.raises(ValueError):
        _run(router.agenerate([1], max_new_tokens=0))
    assert router.alive == [True]


def test_weights_reach_every_live_replica_and_a_replica_failing_the_update_is_taken_out() -> None:
    a, b, c = FakeReplica("a"), FakeReplica("b"), FakeReplica("c", die_after=0)
    router = EngineRouter([a, b, c])
    router.update_weights({}, 1)
    assert router.version == 1 and a.updates == [1] and b.updates == [1]
    assert router.alive == [True, True, False]
    router.update_weights({}, 2)
    assert a.updates == [1, 2] and c.updates == []


def test_replicas_must_agree_on_the_starting_version() -> None:
    b = FakeReplica("b")
    b.version = 3
    with pytest.raises(ValueError, match="same policy version"):
        EngineRouter([FakeReplica("a"), b])


class _DiesAfter:
    """An hf engine replica whose server 'dies' after ``n`` generations."""

    def __init__(self, engine: HFEngine, n: int) -> None:
        self.engine, self.n, self.name, self.calls = engine, n, engine.name, 0

    @property
    def version(self) -> int:
        return self.engine.version

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        self.calls += 1
        if self.calls > self.n:
            raise httpx.RemoteProtocolError("server disconnected without sending a response")
        return await self.engine.agenerate(prompt_ids, max_new_tokens=max_new_tokens)

    def update_weights(self, state_dict: Any, version: int) -> None:
        self.engine.update_weights(state_dict, version)

    async def aclose(self) -> None:
        await self.engine.aclose()


def test_episodes_of_a_dead_replica_are_retried_elsewhere_counted_and_never_rewarded(
    model: Any, tokenizer: Any
) -> None:
    torch.manual_seed(0)

    def hf(name: str) -> HFEngine:
        return HFEngine(model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, name=name)

    dying = _DiesAfter(hf("r0"), n=3)
    router = EngineRouter([dying, hf("r1")])
    producer = RolloutProducer(
        rows=mixed_rows({"length": task_rows("length", "test", 3)}, seed=0),
        env_factory=lambda task, split: LengthEnv(split=split),
        sampler=EngineSampler(router),
        tokenizer=tokenizer,
        num_generations=2,
        limits=EpisodeLimits(max_turns=3, max_new_tokens=8),
        queue_size=4,
        max_infra_retries=3,
    )
    producer.start()
    try:
        groups = [g for _ in range(4) for g in producer.get_groups(1, 1, timeout_s=120)]
    finally:
        producer.stop()
    assert router.alive == [False, True]
    assert router.stats.failed_requests == 1 and router.stats.dead_replicas == 1
    assert producer.stats.infra_errors >= 1 and producer.stats.infra_retries >= 1
    trajectories = [t for g in groups for t in g.trajectories]
    # Only whole episodes reach training: none carries the failure, and every turn was sampled by the router.
    assert len(trajectories) == 8
    assert not any(t.infra_error for t in trajectories)
    assert all(set(t.engines) == {"policy"} for t in trajectories)
    assert dying.calls == 4  # three served, the fourth failed; nothing was sent to it after that
