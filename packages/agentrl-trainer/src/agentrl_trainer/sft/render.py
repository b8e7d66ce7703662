"""A transcript as training tokens: the exact token stream a rollout of it would have, and its loss mask.

A rollout's stream (:func:`agentrl_trainer.rollout.episode.run_episode`) is the rendered prompt (reset messages
and tools, with the generation prompt), then per turn the policy's sampled tokens (through its end-of-turn
token) and the environment's answer rendered on its own. This module builds the same stream from a recorded
conversation with the same functions (:mod:`agentrl_trainer.rollout.chat`), so supervised warm-up trains on
exactly the tokens RL later samples and scores: no template drift between SFT and RL. The loss mask is 1 on
the assistant tokens only (what the policy would sample), as the RL action mask is.

Messages after the last assistant message are dropped: a rollout stops its stream when the environment
ends the episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrl_trainer.rollout.chat import assistant_message_ids, env_message_ids, render_prompt

__all__ = ["RenderedTranscript", "render_transcript"]


@dataclass(frozen=True, slots=True)
class RenderedTranscript:
    """Token ids of a conversation and, per token, whether the policy samples it (the SFT loss mask)."""

    input_ids: list[int]
    loss_mask: list[int]
    prompt_length: int
    """Tokens of the first prompt (reset messages, tools and the generation prompt)."""

    @property
    def labels(self) -> list[int]:
        """TRL/transformers labels: the token where the policy writes it, ``-100`` elsewhere."""
        return [t if m else -100 for t, m in zip(self.input_ids, self.loss_mask, strict=True)]


def render_transcript(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> RenderedTranscript:
    """Render an OpenAI conversation (reset messages, then assistant turns and environment answers) for SFT.

    Args:
        tokenizer: The policy's tokenizer, with the chat template rollouts use.
        messages: The transcript; tool-call arguments may be JSON strings (as environments record them).
        tools: The task's OpenAI tool schemas (rendered into the prompt as in rollouts).

    Returns:
        The token ids and loss mask.

    Raises:
        ValueError: If the transcript has no assistant message, or a tool call cannot be rendered.
    """
    turns = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if not turns:
        raise ValueError("The transcript has no assistant message to train on.")
    prompt = render_prompt(tokenizer, messages[: turns[0]], tools)
    input_ids, loss_mask = list(prompt), [0] * len(prompt)
    for number, position in enumerate(turns):
        action = assistant_message_ids(tokenizer, messages[position])
        input_ids.extend(action)
        loss_mask.extend([1] * len(action))
        if number + 1 == len(turns):
            break
        observation = messages[position + 1 : turns[number + 1]]
        answer = env_message_ids(tokenizer, observation)
        input_ids.extend(answer)
        loss_mask.extend([0] * len(answer))
    return RenderedTranscript(input_ids, loss_mask, len(prompt))
