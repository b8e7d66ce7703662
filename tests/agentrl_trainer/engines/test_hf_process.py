from __future__ import annotations

import asyncio
import copy
import math
from typing import Any

import pytest
import torch

from agentrl_trainer.engines.hf_process import ProcessEngine


def _uniform(model: Any) -> Any:
    """A copy of ``model`` with a zero output head: every token has log-prob -log(vocab size), exactly."""
    changed = copy.deepcopy(model)
    with torch.no_grad():
        changed.get_output_embeddings().weight.zero_()
    return changed


@pytest.fixture
def engine(model: Any, tokenizer: Any) -> Any:
    engine = ProcessEngine(
        model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, name="policy", seed=0
    )
    yield engine
    asyncio.run(engine.aclose())
    assert not engine._process.is_alive()


def test_the_engine_samples_in_its_own_process_and_new_weights_reach_it_with_their_version(
    engine: Any, model: Any
) -> None:
    import os

    assert engine.pid is not None and engine.pid != os.getpid()

    async def sample(prompts: list[list[int]]) -> list[Any]:
        return await asyncio.gather(*(engine.agenerate(p, max_new_tokens=6) for p in prompts))

    generations = asyncio.run(sample([[1, 2, 3], [4, 5], [6]]))
    assert len(generations) == 3
    for g in generations:
        assert 1 <= len(g.token_ids) <= 6 and len(g.logprobs) == len(g.token_ids)
        assert all(lp <= 0.0 for lp in g.logprobs)
        assert g.version == 0 and g.engine == "policy"
    assert engine.batches >= 1 and engine.generated_tokens == sum(len(g.token_ids) for g in generations)
    assert engine.process_busy_s > 0

    engine.update_weights(_uniform(model).state_dict(), 3)
    assert engine.version == 3
    (generation,) = asyncio.run(sample([[1, 2, 3]]))
    # Only the updated weights give every sampled token the uniform log-prob.
    assert generation.version == 3
    uniform = -math.log(model.config.vocab_size)
    assert generation.logprobs == pytest.approx([uniform] * len(generation.token_ids), abs=1e-5)


def test_a_dead_engine_process_fails_the_request_with_a_clear_error(engine: Any) -> None:
    engine._process.kill()
    engine._process.join()

    async def main() -> Any:
        return await engine.agenerate([1, 2], max_new_tokens=2)

    with pytest.raises(RuntimeError, match="engine process 'policy'.*is gone"):
        asyncio.run(main())


@pytest.mark.slow
def test_training_with_engine_processes_reaches_them_with_new_weights_and_stops_them(
    tmp_path: Any, tiny_model_path: Any, tokenizer: Any
) -> None:
    import threading

    from tests.agentrl_trainer.test_trainer import _config, _trainer

    # queue_size 3 and max_staleness 2 admit 3 groups at version 0; 4 steps train at least 4 groups, so at
    # least one was started after an update and its policy turns must carry version >= 1.
    config = _config(tmp_path, rollout_engine="hf_process", max_steps=4, lagged_fraction=0.3, lagged_refresh_steps=2)
    trainer = _trainer(tiny_model_path, tokenizer, config)
    seen: list[Any] = []
    original = trainer._record

    def record(groups: list[Any], *args: Any) -> None:
        seen.extend(groups)
        original(groups, *args)

    trainer._record = record  # type: ignore[method-assign]
    threads_before = set(threading.enumerate())
    trainer.train()
    assert trainer.state.global_step == 4
    engines = trainer.sampler.engines
    assert [e.name for e in engines] == ["policy", "lagged0"]
    assert all(isinstance(e, ProcessEngine) and not e._process.is_alive() for e in engines)
    assert set(threading.enumerate()) <= threads_before, "threads left running after train()"
    # Turns carry the version the engine process had loaded.
    versions = {s.version for g in seen for t in g.trajectories for s in t.segments if s.is_action}
    assert 0 in versions and max(versions) >= 1


def test_an_engine_pinned_to_cores_runs_on_those_cores_only(model: Any, tokenizer: Any) -> None:
    import os

    mine = os.sched_getaffinity(0)
    core = max(mine)
    engine = ProcessEngine(model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, cpus=[core])
    try:
        assert os.sched_getaffinity(engine.pid) == {core}
        assert os.sched_getaffinity(0) == mine  # the trainer's own cores are left alone
    finally:
        asyncio.run(engine.aclose())


@pytest.mark.parametrize("cpus", [[], [10_000]])
def test_engine_cores_the_trainer_cannot_use_are_refused(model: Any, tokenizer: Any, cpus: list[int]) -> None:
    with pytest.raises(ValueError, match="engine cpus .* are not cores of this machine"):
        ProcessEngine(model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, cpus=cpus)
