"""Partial rollouts: a turn interrupted by a weight update is resumed with the new weights, each token tagged.

The engines sample near-greedily (temperature 1e-4) so that the expected tokens are the argmax of the weights
that should have sampled them, computed here with plain forward passes.
"""

from __future__ import annotations

import asyncio
import copy
import math
import threading
from collections.abc import Callable
from typing import Any

import pytest
import torch

from agentrl_trainer.engines.hf import HFEngine, sample_batch
from agentrl_trainer.engines.hf_process import ProcessEngine
from agentrl_trainer.rollout.episode import EpisodeLimits, run_episode
from agentrl_trainer.types import Generation, Group, TrainingRow
from tests.agentrl_envs.core.toy_env import ToyEnv

PROMPT = [5, 17, 42, 8]
NEAR_GREEDY = 1e-4
NEW_TOKENS = 12
CHUNK = 4


def _argmax_continuation(model: Any, prefix: list[int], n: int) -> list[int]:
    """The ``n`` tokens greedy decoding appends to ``prefix`` (no end-of-turn token: the caller picks one unused)."""
    ids = list(prefix)
    with torch.no_grad():
        for _ in range(n):
            logits = model(input_ids=torch.tensor([ids])).logits[0, -1]
            ids.append(int(logits.argmax()))
    return ids[len(prefix) :]


def _perturbed(model: Any) -> Any:
    """A copy of ``model`` with every weight moved by seeded noise: the "trained" weights of version 1."""
    changed = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in changed.parameters():
            p.add_(torch.randn(p.shape, generator=generator) * 0.5)
    return changed


@pytest.fixture(scope="module")
def expected(model: Any) -> dict[str, Any]:
    """What the old weights sample for the first chunk and the new weights continue with, and an unused eos."""
    new = _perturbed(model)
    first = _argmax_continuation(model, PROMPT, CHUNK)
    rest = _argmax_continuation(new, PROMPT + first, NEW_TOKENS - CHUNK)
    old_rest = _argmax_continuation(model, PROMPT + first, NEW_TOKENS - CHUNK)
    assert rest != old_rest, "the new weights must continue differently, or the test could not tell them apart"
    eos = next(t for t in range(model.config.vocab_size - 1, 0, -1) if t not in first + rest + old_rest)
    return {"new": new, "first": first, "rest": rest, "old_rest": old_rest, "eos": eos}


def _update_after_first_chunk(engine: Any, state_dict: dict[str, torch.Tensor], version: int) -> list[int]:
    """Wrap ``engine._sample`` so that the weights move to ``version`` right after its first chunk; returns sizes."""
    sample: Callable[[list[tuple[list[int], int]]], list[Generation]] = engine._sample
    chunks: list[int] = []

    def wrapped(prompts: list[tuple[list[int], int]]) -> list[Generation]:
        out = sample(prompts)
        chunks.append(max(limit for _, limit in prompts))
        if len(chunks) == 1:
            engine.update_weights(state_dict, version)
        return out

    engine._sample = wrapped
    return chunks


def _generate(engine: Any, prompt: list[int] = PROMPT, n: int = NEW_TOKENS) -> Generation:
    async def main() -> Generation:
        try:
            return await engine.agenerate(prompt, max_new_tokens=n)
        finally:
            await engine.aclose()

    return asyncio.run(main())


def _hf(model: Any, eos: int, pad: int, **kwargs: Any) -> HFEngine:
    return HFEngine(model, eos_token_id=eos, pad_token_id=pad, temperature=NEAR_GREEDY, **kwargs)


def test_a_turn_interrupted_by_a_weight_update_continues_with_the_new_weights_each_token_tagged(
    model: Any, tokenizer: Any, expected: dict[str, Any]
) -> None:
    engine = _hf(model, expected["eos"], tokenizer.pad_token_id, chunk_tokens=CHUNK)
    chunks = _update_after_first_chunk(engine, expected["new"].state_dict(), 1)
    generation = _generate(engine)

    assert chunks == [CHUNK, CHUNK, CHUNK]
    assert list(generation.token_ids) == expected["first"] + expected["rest"]
    assert generation.token_versions == (0,) * CHUNK + (1,) * (NEW_TOKENS - CHUNK)
    assert generation.version == 0  # the oldest: what staleness counts
    assert generation.finish_reason == "length" and len(generation.logprobs) == NEW_TOKENS
    assert engine.resumed_turns == 1 and engine.version == 1


def test_without_an_update_chunks_sample_what_one_call_samples_and_carry_no_per_token_versions(
    model: Any, tokenizer: Any, expected: dict[str, Any]
) -> None:
    engine = _hf(model, expected["eos"], tokenizer.pad_token_id, chunk_tokens=CHUNK)
    generation = _generate(engine)

    assert list(generation.token_ids) == expected["first"] + expected["old_rest"]
    assert generation.token_versions == () and generation.versions_per_token == (0,) * NEW_TOKENS
    assert engine.resumed_turns == 0


def test_chunks_stop_at_the_end_of_turn_token(model: Any, tokenizer: Any, expected: dict[str, Any]) -> None:
    # The sixth token as the end-of-turn token: the turn stops there, in the second chunk.
    eos = (expected["first"] + expected["old_rest"])[5]
    engine = _hf(model, eos, tokenizer.pad_token_id, chunk_tokens=CHUNK)
    generation = _generate(engine)

    stop = (expected["first"] + expected["old_rest"]).index(eos)
    assert list(generation.token_ids) == (expected["first"] + expected["old_rest"])[: stop + 1]
    assert generation.finish_reason == "stop"


def test_off_by_default_a_batch_is_one_sample_call_and_an_update_waits_for_the_whole_turn(
    model: Any, tokenizer: Any, expected: dict[str, Any]
) -> None:
    engine = _hf(model, expected["eos"], tokenizer.pad_token_id)
    assert engine.chunk_tokens == 0
    chunks = _update_after_first_chunk(engine, expected["new"].state_dict(), 1)
    generation = _generate(engine)

    assert chunks == [NEW_TOKENS]
    assert list(generation.token_ids) == expected["first"] + expected["old_rest"]
    assert generation.version == 0 and generation.token_versions == ()

    # Off, a batch is exactly one sample_batch call: byte for byte its result with the same seed and thread.
    engine = HFEngine(model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(3)
    through_engine = engine._run_batch([(PROMPT, 20), (PROMPT[:2], 7)])
    torch.manual_seed(3)
    direct = sample_batch(
        engine.model,
        [(PROMPT, 20), (PROMPT[:2], 7)],
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        temperature=1.0,
        version=0,
        engine="policy",
    )
    assert through_engine == direct


def test_an_update_from_another_thread_lands_between_two_chunks_of_a_turn(
    model: Any, tokenizer: Any, expected: dict[str, Any]
) -> None:
    engine = _hf(model, expected["eos"], tokenizer.pad_token_id, chunk_tokens=2)
    sample = engine._sample
    waiting = threading.Event()

    def first_chunk_waits_for_the_update(prompts: list[tuple[list[int], int]]) -> list[Generation]:
        out = sample(prompts)
        if not waiting.is_set():
            with engine._lock:  # as if still sampling: the update blocks on the lock
                waiting.set()
                while not engine._updates_waiting:
                    threading.Event().wait(0.001)
        return out

    engine._sample = first_chunk_waits_for_the_update

    def trainer() -> None:
        waiting.wait()
        engine.update_weights(expected["new"].state_dict(), 1)

    thread = threading.Thread(target=trainer)
    thread.start()
    generation = _generate(engine)
    thread.join()

    assert generation.token_versions == (0, 0) + (1,) * (NEW_TOKENS - 2)
    assert list(generation.token_ids[:2]) == expected["first"][:2]


def test_a_waiting_update_interrupts_a_generate_call_mid_turn(
    model: Any, tokenizer: Any, expected: dict[str, Any]
) -> None:
    # One chunk as long as the turn: only the interrupt can make the update land inside it. The end-of-turn
    # token is outside the vocabulary, so the turn always runs its 400 tokens.
    engine = _hf(model, model.config.vocab_size, tokenizer.pad_token_id, chunk_tokens=400)
    calls: list[int] = []
    sample = engine._sample

    def counted(prompts: list[tuple[list[int], int]]) -> list[Generation]:
        calls.append(max(limit for _, limit in prompts))
        return sample(prompts)

    engine._sample = counted

    def trainer() -> None:
        while not engine._lock.locked():  # generation has started
            threading.Event().wait(0.0005)
        engine.update_weights(expected["new"].state_dict(), 1)

    thread = threading.Thread(target=trainer)
    thread.start()
    generation = _generate(engine, n=400)
    thread.join()

    switch = generation.token_versions.index(1)
    assert 1 <= switch < 400 and set(generation.token_versions[switch:]) == {1}
    assert len(calls) == 2 and calls[1] == 400 - switch  # the rest of the turn, resumed in one call
    assert len(generation.token_ids) == 400 and generation.finish_reason == "length"


def test_the_episode_keeps_each_tokens_version_and_the_group_is_as_stale_as_its_oldest_token(
    model: Any, tokenizer: Any, expected: dict[str, Any]
) -> None:
    engine = _hf(model, expected["eos"], tokenizer.pad_token_id, chunk_tokens=CHUNK)
    _update_after_first_chunk(engine, expected["new"].state_dict(), 1)
    env = ToyEnv(split="test")
    row = TrainingRow(env.task, "test", 1)

    async def main() -> Any:
        try:
            limits = EpisodeLimits(max_turns=1, max_new_tokens=NEW_TOKENS, max_total_tokens=4096)
            return await run_episode(row, env, tokenizer=tokenizer, pick_engine=lambda: engine, limits=limits)
        finally:
            await engine.aclose()

    trajectory = asyncio.run(main())
    (segment,) = [s for s in trajectory.segments if s.is_action]
    assert segment.version == 0
    assert segment.token_versions == (0,) * CHUNK + (1,) * (NEW_TOKENS - CHUNK)
    group = Group(row, [trajectory], created_version=1)
    assert group.staleness(2) == 2  # counted from version 0, the oldest token's, not 1


def test_the_process_engine_resumes_a_turn_with_the_weights_it_loads_between_chunks(model: Any, tokenizer: Any) -> None:
    uniform = copy.deepcopy(model)
    with torch.no_grad():
        uniform.get_output_embeddings().weight.zero_()  # every token at log-prob -log(vocab size)
    engine = ProcessEngine(
        model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, seed=0, chunk_tokens=3
    )
    _update_after_first_chunk(engine, uniform.state_dict(), 5)
    generation = _generate(engine, n=9)  # closes the engine
    if len(generation.token_ids) <= 3:
        pytest.fail(f"the turn stopped in its first chunk ({generation}); pick another prompt")
    assert generation.token_versions == (0,) * 3 + (5,) * (len(generation.token_ids) - 3)
    assert generation.version == 0 and engine.resumed_turns == 1
    flat = -math.log(model.config.vocab_size)
    assert all(lp != pytest.approx(flat, abs=1e-5) for lp in generation.logprobs[:3])
    assert generation.logprobs[3:] == pytest.approx([flat] * (len(generation.token_ids) - 3), abs=1e-5)
