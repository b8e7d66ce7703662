"""Task text for training a tiny model's tokenizer: prompts, tool schemas, observations and oracle moves.

A tokenizer trained on the text the model will read and write keeps the tiny model's sequences short. The
text is collected by playing each task's oracle (when it has one) through the environment, so tool results
and the gold tool calls, rendered as the chat template renders them, are in it too.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from agentrl_envs.core import AsyncToolEnv, EnvFactory, InfraError

__all__ = ["episode_text", "task_corpus"]

logger = logging.getLogger(__name__)


def episode_text(messages: Iterable[dict[str, Any]]) -> list[str]:
    """The strings of a conversation as the model sees them (contents and tool calls in the Qwen2.5 form)."""
    texts = []
    for message in messages:
        if message.get("content"):
            texts.append(str(message["content"]))
        for call in message.get("tool_calls") or []:
            function = call["function"]
            arguments = function["arguments"]
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
            texts.append(json.dumps({"name": function["name"], "arguments": arguments}))
    return texts


def task_corpus(
    env_factory: EnvFactory,
    tasks: Iterable[str],
    split: str,
    *,
    max_samples: int | None = None,
    max_oracle_turns: int = 8,
    oracle_options: dict[str, dict[str, Any]] | None = None,
) -> list[str]:
    """Text of ``tasks``' samples in ``split``: reset messages, tool schemas and oracle episodes.

    Args:
        env_factory: ``(task, split) -> env`` (see :func:`agentrl_trainer.envs.make_env_factory`).
        tasks: Task names.
        split: The split to read.
        max_samples: Read at most this many samples per task.
        max_oracle_turns: Most oracle moves per sample.
        oracle_options: Options of each task's oracle (e.g. ``{"db": {"show_sql": True}}``): the SFT warm-up's,
            so the words its transcripts write (SQL keywords) get tokens of their own.
    """
    texts: list[str] = []
    for task in tasks:
        env = env_factory(task, split)
        oracle = _oracle(task, split, **((oracle_options or {}).get(task) or {}))
        try:
            count = env.num_samples() if max_samples is None else min(max_samples, env.num_samples())
            for index in range(count):
                try:
                    messages, info = env.reset(options={"index": index})
                except InfraError as e:  # a sample the backend cannot load teaches the tokenizer nothing
                    logger.warning("task=%s index=%d: skipped in the corpus: %s", task, index, e)
                    continue
                texts.extend(episode_text(messages))
                if index == 0:
                    texts.append(json.dumps(info.get("tools") or []))
                if oracle is not None:
                    texts.extend(_play_oracle(env, oracle, index, messages, max_oracle_turns))
        finally:
            env.close()
    return texts


def _oracle(task: str, split: str, **options: Any) -> Any:
    from agentrl_envs.core.errors import AgentRLError
    from agentrl_envs.core.oracle import load_oracle

    try:
        return load_oracle(task, split=split, **options)
    except AgentRLError:  # tasks of the caller's own (env_factories) have no registered oracle
        return None


def _play_oracle(
    env: AsyncToolEnv, oracle: Any, index: int, observation: list[dict[str, Any]], max_turns: int
) -> list[str]:
    from agentrl_trainer.sft.transcripts import play_oracle

    messages, _ = play_oracle(env, oracle, index, observation, max_turns)
    return episode_text(messages)
