"""Environment factories: how the trainer gets an environment for a task and split.

The default makes the registered AgentBench task in process (``agentrl_envs.make``) and unwraps it to the
``ToolEnv`` so its async twins are reachable. Pass ``env_factories={"name": callable}`` to the trainer to
add tasks of your own (the quickstart's calibration tasks, a RemoteEnv to a controller, test envs).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentrl_envs.core import AsyncToolEnv, EnvError, EnvFactory, InfraError

__all__ = [
    "ContextLimitError",
    "FirstPrompt",
    "TaskEnvFactory",
    "check_prompts_fit",
    "make_env_factory",
    "num_samples",
    "probe_task",
]

logger = logging.getLogger(__name__)

PROMPT_PROBES = 3
"""Samples tried per task when looking for one that starts (a sample may never start, e.g. DB dev 5)."""


class ContextLimitError(ValueError):
    """A task's prompt alone does not fit in ``max_total_tokens``: no episode of it could take a turn."""


TaskEnvFactory = Callable[..., AsyncToolEnv]
"""``split -> env`` for one task; called as ``factory(split, **options)`` when the config gives it options."""


def _registered(task: str, split: str, **options: Any) -> AsyncToolEnv:
    from agentrl_envs import make

    env = make(task, split=split, **options).unwrapped
    if not isinstance(env, AsyncToolEnv):
        raise EnvError(
            f"{task}: {type(env).__name__} has no areset/astep/num_samples; "
            "register a ToolEnv subclass (or give the trainer an env factory of its own)."
        )
    return env


def make_env_factory(
    overrides: Mapping[str, TaskEnvFactory] | None = None,
    env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
) -> EnvFactory:
    """A ``(task, split) -> env`` factory: ``overrides`` first, then the registered AgentBench tasks.

    Args:
        overrides: ``{task: split -> env}`` for tasks of your own.
        env_kwargs: ``{task: options}`` passed to the task's environment (``AgentRLConfig.env_kwargs``).
    """
    table = dict(overrides or {})
    options_by_task = {task: dict(options) for task, options in (env_kwargs or {}).items()}

    def factory(task: str, split: str) -> AsyncToolEnv:
        options = options_by_task.get(task, {})
        if task in table:
            return table[task](split, **options)
        return _registered(task, split, **options)

    return factory


def num_samples(factory: EnvFactory, task: str, split: str) -> int:
    """How many samples ``task``/``split`` has (opens and closes one environment)."""
    env = factory(task, split)
    try:
        return int(env.num_samples())
    finally:
        env.close()


def probe_task(factory: EnvFactory, task: str, split: str) -> tuple[int, FirstPrompt | None]:
    """How many samples ``task``/``split`` has, and the first prompt that starts (one environment, then closed).

    Up to :data:`PROMPT_PROBES` samples are tried for the prompt, since a sample may never start (DB dev 5).
    """
    env = factory(task, split)
    try:
        count = int(env.num_samples())
        for index in range(min(count, PROMPT_PROBES)):
            try:
                messages, info = env.reset(options={"index": index})
            except InfraError as e:  # the producer lists such samples; measure the next one
                logger.info("task=%s index=%d does not start (%s); measuring the next sample", task, index, e)
                continue
            return count, FirstPrompt(task, index, list(messages), info.get("tools") or None)
        return count, None
    finally:
        env.close()


@dataclass(frozen=True, slots=True)
class FirstPrompt:
    """A task's first prompt: the reset messages and tools of the first sample that starts."""

    task: str
    index: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None


def check_prompts_fit(
    prompts: Iterable[FirstPrompt], tokenizer: Any, max_total_tokens: int, max_new_tokens_per_turn: int
) -> dict[str, int]:
    """Render each task's first prompt (reset messages and tools) and refuse a task whose prompt leaves no room.

    An episode stops with ``agent context limit`` once its context reaches ``max_total_tokens``; a prompt that
    long alone means every episode of the task ends at reset, and the run learns nothing from it.

    Returns:
        ``{task: prompt tokens}``.

    Raises:
        ContextLimitError: With the numbers, if a prompt is ``max_total_tokens`` long or longer.
    """
    from agentrl_trainer.rollout.chat import render_prompt

    lengths = {p.task: len(render_prompt(tokenizer, p.messages, p.tools)) for p in prompts}
    too_long = {task: n for task, n in lengths.items() if n >= max_total_tokens}
    if too_long:
        details = "; ".join(f"{task}: {n} tokens" for task, n in sorted(too_long.items()))
        needed = max(too_long.values()) + max_new_tokens_per_turn
        raise ContextLimitError(
            f"The prompt alone (system and first user message with the tool schemas) is longer than "
            f"max_total_tokens={max_total_tokens} for {details}, so every episode of it would end as "
            f"'agent context limit' before its first turn. Raise max_total_tokens to at least {needed} (prompt plus "
            f"one turn of max_new_tokens_per_turn={max_new_tokens_per_turn}; more for several turns), or leave "
            "the task out."
        )
    for task, n in lengths.items():
        if n + max_new_tokens_per_turn > max_total_tokens:
            logger.warning(
                "task=%s: the prompt is %d tokens; with max_total_tokens=%d its first turn gets only %d of "
                "max_new_tokens_per_turn=%d tokens",
                task,
                n,
                max_total_tokens,
                max_total_tokens - n,
                max_new_tokens_per_turn,
            )
    return lengths
