"""One episode as a coroutine: reset, then generate / parse / step until the environment or a limit ends it.

The token stream is built from exact engine output (actions) and separately rendered environment
messages (masked out of the loss). Every action segment records the engine and policy version that
sampled it; the engine is chosen per turn (cross-policy sampling). Limits: ``max_turns`` assistant turns,
``max_new_tokens`` per turn and ``max_total_tokens`` for prompt plus completion; an episode stopped by a
limit (or by the environment's own round limit) ends unfinished and gets ``unfinished_penalty``.
An environment fault, or a rollout engine raising ``InfraError`` (a dead replica behind the router), marks the
trajectory ``infra_error`` so the caller can retry or drop it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentrl_envs.core import AsyncToolEnv, InfraError
from agentrl_envs.core.status import LIMIT_STATUSES, SampleStatus
from agentrl_trainer.engines.protocol import RolloutEngine
from agentrl_trainer.rollout.chat import env_message_ids, parse_assistant, render_prompt
from agentrl_trainer.rollout.faults import fault_from_exception, fault_from_info
from agentrl_trainer.types import TokenSegment, TrainingRow, Trajectory

__all__ = ["EpisodeLimits", "run_episode"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EpisodeLimits:
    """Per-episode limits and the penalty for hitting them."""

    max_turns: int = 8
    max_new_tokens: int = 64
    max_total_tokens: int = 2048
    unfinished_penalty: float = -0.2


async def run_episode(
    row: TrainingRow,
    env: AsyncToolEnv,
    *,
    tokenizer: Any,
    pick_engine: Callable[[], RolloutEngine],
    limits: EpisodeLimits,
    is_lagged: Callable[[RolloutEngine], bool] | None = None,
) -> Trajectory:
    """Play one episode of ``row`` on ``env`` (an unwrapped :class:`~agentrl_envs.core.ToolEnv` or RemoteEnv).

    Args:
        row: The sample to play.
        env: The environment (reset here).
        tokenizer: Renders the chat template and parses tool calls.
        pick_engine: Chooses the engine of each turn (cross-policy sampling).
        limits: Turn and token limits.
        is_lagged: Whether an engine is a lagged one; recorded on its turns (default: none is).

    Returns:
        The trajectory; ``infra_error`` is set (and the reward meaningless) when the environment failed.
    """
    started = time.perf_counter()
    try:
        messages, info = await env.areset(options={"index": row.index})
    except InfraError as e:  # logged once per kind by the producer's FaultLog
        fault = fault_from_exception(row, "reset", e)
        return Trajectory(row=row, prompt_ids=[], status=SampleStatus.TASK_ERROR, infra_error=True, fault=fault)
    tools = info.get("tools") or None
    prompt_ids = render_prompt(tokenizer, messages, tools)
    trajectory = Trajectory(row=row, prompt_ids=prompt_ids, messages=list(messages))
    context = list(prompt_ids)
    status = SampleStatus.TASK_LIMIT_REACHED
    for turn in range(limits.max_turns):
        budget = min(limits.max_new_tokens, limits.max_total_tokens - len(context))
        if budget <= 0:
            status = SampleStatus.AGENT_CONTEXT_LIMIT
            break
        engine = pick_engine()
        try:
            generation = await engine.agenerate(context, max_new_tokens=budget)
        except InfraError as e:  # a rollout engine replica died: handled like an env fault, never rewarded
            trajectory.fault = fault_from_exception(row, "engine", e)
            trajectory.infra_error = True
            status = SampleStatus.TASK_ERROR
            break
        trajectory.segments.append(
            TokenSegment(
                generation.token_ids,
                True,
                generation.logprobs,
                version=generation.version,
                engine=generation.engine,
                lagged=bool(is_lagged and is_lagged(engine)),
                token_versions=generation.token_versions,
            )
        )
        action = parse_assistant(tokenizer, list(generation.token_ids), context, tools, turn)
        context.extend(generation.token_ids)
        trajectory.turns = turn + 1
        trajectory.messages.append(action)
        observation, reward, terminated, truncated, info = await env.astep(action)
        trajectory.env_reward += float(reward)
        trajectory.score = float(info.get("score", reward) or 0.0)
        trajectory.messages.extend(observation)
        tools = info.get("tools") or tools  # a task may add tools mid-episode (BFCL miss_func): parse them too
        if info.get("infra_error"):
            trajectory.fault = fault_from_info(row, info)
            trajectory.infra_error = True
            status = SampleStatus(info.get("status", SampleStatus.TASK_ERROR))
            break
        if terminated or truncated:
            status = SampleStatus(info.get("status", SampleStatus.COMPLETED))
            break
        env_ids = env_message_ids(tokenizer, observation)
        if generation.finish_reason == "length":
            # The turn was cut before its end-of-turn token: close it in the stream (as an env token, not the model's).
            env_ids = [tokenizer.eos_token_id, *env_ids]
        trajectory.segments.append(TokenSegment(tuple(env_ids), False))
        context.extend(env_ids)
    trajectory.status = status
    penalty = limits.unfinished_penalty if status in LIMIT_STATUSES else 0.0
    trajectory.reward = trajectory.env_reward + penalty
    trajectory.duration_s = time.perf_counter() - started
    return trajectory
