from __future__ import annotations

import asyncio
from typing import Any

import torch

from agentrl_envs.core import SampleStatus
from agentrl_trainer.batch import BatchOptions, build_inputs
from agentrl_trainer.engines.hf import HFEngine
from agentrl_trainer.rollout.episode import EpisodeLimits, run_episode
from agentrl_trainer.types import Generation, Group, TrainingRow
from tests.agentrl_envs.core.toy_env import ToyEnv
from tests.agentrl_trainer.envs import FlakyEnv, LengthEnv


def _engine(model: Any, tokenizer: Any, **kwargs: Any) -> HFEngine:
    return HFEngine(model, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, **kwargs)


class _Recording:
    """Wraps an engine and keeps every generation it returned."""

    def __init__(self, engine: HFEngine) -> None:
        self.engine = engine
        self.name = engine.name
        self.generations: list[Generation] = []

    @property
    def version(self) -> int:
        return self.engine.version

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        generation = await self.engine.agenerate(prompt_ids, max_new_tokens=max_new_tokens)
        self.generations.append(generation)
        return generation


def _play(env: Any, pick: Any, tokenizer: Any, limits: EpisodeLimits, index: int = 1) -> Any:
    async def main() -> Any:
        try:
            return await run_episode(
                TrainingRow(env.task, "test", index), env, tokenizer=tokenizer, pick_engine=pick, limits=limits
            )
        finally:
            await getattr(pick(), "engine", pick()).aclose()

    return asyncio.run(main())


def test_loss_tokens_are_exactly_the_sampled_tokens_and_env_tokens_are_masked(model: Any, tokenizer: Any) -> None:
    torch.manual_seed(0)
    engine = _Recording(_engine(model, tokenizer))
    limits = EpisodeLimits(max_turns=3, max_new_tokens=12, max_total_tokens=4096)
    trajectory = _play(ToyEnv(split="test"), lambda: engine, tokenizer, limits)
    assert trajectory.turns == 3 and len(engine.generations) == 3
    ids, mask = trajectory.completion_ids, trajectory.action_mask
    sampled = [t for g in engine.generations for t in g.token_ids]
    assert [t for t, m in zip(ids, mask, strict=True) if m] == sampled
    decoded = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m])
    assert decoded == "".join(tokenizer.decode(list(g.token_ids)) for g in engine.generations)
    env_text = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if not m])
    assert "<|im_start|>user" in env_text and "<|im_start|>assistant" in env_text
    # The engine's log-probs are the trainer model's log-probs of the same tokens (same weights).
    inputs, _ = build_inputs(
        [Group(trajectory.row, [trajectory], 0)], BatchOptions(pad_token_id=tokenizer.pad_token_id)
    )
    full = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
    with torch.no_grad():
        logits = model(input_ids=full).logits[:, len(trajectory.prompt_ids) - 1 : -1]
    logps = torch.log_softmax(logits, -1).gather(-1, inputs["completion_ids"].unsqueeze(-1)).squeeze(-1)
    action = inputs["tool_mask"].bool()
    assert torch.allclose(logps[action], inputs["old_per_token_logps"][action], atol=1e-4)
    assert trajectory.status is SampleStatus.TASK_LIMIT_REACHED
    assert trajectory.reward == -0.2  # the unfinished penalty


def test_turns_carry_the_version_live_when_they_were_sampled(model: Any, tokenizer: Any) -> None:
    engine = _engine(model, tokenizer)
    state = {k: v.clone() for k, v in model.state_dict().items()}

    class Bumping:
        """Push weights version n+1 after each turn, as the trainer would between optimizer steps."""

        name = "policy"
        turns = 0

        async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
            generation = await engine.agenerate(prompt_ids, max_new_tokens=max_new_tokens)
            Bumping.turns += 1
            engine.update_weights(state, Bumping.turns)
            return generation

        @property
        def engine(self) -> HFEngine:
            return engine

    limits = EpisodeLimits(max_turns=3, max_new_tokens=6, max_total_tokens=4096)
    trajectory = _play(ToyEnv(split="test"), Bumping, tokenizer, limits)
    assert trajectory.versions == [0, 1, 2]
    assert trajectory.engines == ["policy"] * 3


def test_an_env_that_crashes_mid_episode_is_an_infra_error_not_a_reward(model: Any, tokenizer: Any) -> None:
    FlakyEnv.crashed = 0
    engine = _engine(model, tokenizer)
    limits = EpisodeLimits(max_turns=4, max_new_tokens=6, max_total_tokens=4096)
    trajectory = _play(FlakyEnv(split="test"), lambda: engine, tokenizer, limits)
    assert trajectory.infra_error
    assert trajectory.status is SampleStatus.TASK_ERROR
    healthy = _play(LengthEnv(split="test"), lambda: engine, tokenizer, limits)
    assert not healthy.infra_error and healthy.status is SampleStatus.COMPLETED


def test_token_limit_ends_the_episode_unfinished(model: Any, tokenizer: Any) -> None:
    engine = _engine(model, tokenizer)
    env = ToyEnv(split="test")
    limits = EpisodeLimits(max_turns=8, max_new_tokens=50, max_total_tokens=0)
    trajectory = _play(env, lambda: engine, tokenizer, limits)
    assert trajectory.status is SampleStatus.AGENT_CONTEXT_LIMIT and trajectory.turns == 0
    assert trajectory.reward == limits.unfinished_penalty
