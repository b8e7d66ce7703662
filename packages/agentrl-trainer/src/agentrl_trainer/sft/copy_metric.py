"""Does a model copy from its prompt? Teacher-forced accuracy on the transcript tokens that only copying predicts.

A tiny model SFT'd on DB oracle transcripts learns the tool-call format and SQL syntax long before it writes the
table, column and value names of *its* task (docs/benchmarks.md, "Learning on real DB"). Playing episodes tells
this slowly and coarsely (success needs every name right). This metric tells it in one forward pass per
transcript: among the tokens the policy writes (the SFT loss mask), the **copied** ones are those that occur in
the prompt's last user message (the task's own question and schema) and nowhere before it (not in the system
prompt, the tool schemas or earlier examples, which every task shares). Those are the names and values a model
can only get right by reading them from its prompt; every other written token (syntax, keywords, punctuation,
the tool-call frame) a model can memorise. Accuracy is greedy next-token accuracy under teacher forcing, the two
groups reported apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentrl_trainer.sft.render import RenderedTranscript

__all__ = ["CopyTokenAccuracy", "copied_target_mask", "copy_token_accuracy", "shared_prompt_tokens"]


@dataclass(frozen=True)
class CopyTokenAccuracy:
    """Next-token accuracy on the copied written tokens and on the other written tokens."""

    copied: float
    other: float
    copied_tokens: int
    other_tokens: int
    rows_all_copied: float
    """Share of transcripts whose copied tokens are all predicted right (closer to what an episode needs)."""


def _last_user_message(rendered: RenderedTranscript, turn_start: int) -> tuple[int, int]:
    """Start and end of the prompt's last user message (between the last two turn starts of the prompt)."""
    prompt = rendered.input_ids[: rendered.prompt_length]
    starts = [i for i, token in enumerate(prompt) if token == turn_start]
    if len(starts) < 2:
        raise ValueError(
            f"the prompt has {len(starts)} turn-start tokens (id {turn_start}); a user message then the generation "
            "prompt needs two: render the transcript with the chat template rollouts use."
        )
    return starts[-2], starts[-1]


def shared_prompt_tokens(rendered: RenderedTranscript, turn_start: int) -> set[int]:
    """The token ids before the prompt's last user message (system prompt, tools, earlier turns)."""
    return set(rendered.input_ids[: _last_user_message(rendered, turn_start)[0]])


def copied_target_mask(
    rendered: RenderedTranscript, turn_start: int, shared: frozenset[int] = frozenset()
) -> list[bool]:
    """Per token of ``rendered``: whether it is written by the policy and copied from the last user message.

    Args:
        rendered: A transcript rendered for SFT (:func:`~agentrl_trainer.sft.render.render_transcript`).
        turn_start: The chat template's turn-start token id (``<|im_start|>`` for Qwen's).
        shared: Token ids never counted as copied, besides those before the last user message (e.g. a system
            prompt's when the transcript is rendered without it, so the groups stay those of the full prompt).

    Returns:
        One flag per token: trained (``loss_mask``) and its id occurs in the prompt's last user message but not
        in any token before that message nor in ``shared``.

    Raises:
        ValueError: When the prompt has no user message before its generation prompt.
    """
    start, end = _last_user_message(rendered, turn_start)
    own = set(rendered.input_ids[start:end]) - set(rendered.input_ids[:start]) - shared
    return [bool(m) and t in own for t, m in zip(rendered.input_ids, rendered.loss_mask, strict=True)]


def copy_token_accuracy(
    model: Any,
    rows: list[RenderedTranscript],
    turn_start: int,
    *,
    batch_size: int = 8,
    shared: frozenset[int] = frozenset(),
) -> CopyTokenAccuracy:
    """Greedy next-token accuracy of ``model`` on the copied and on the other written tokens of ``rows``.

    Args:
        model: A causal LM.
        rows: Rendered transcripts (held-out ones, for a figure that says whether the model copies).
        turn_start: The chat template's turn-start token id (see :func:`copied_target_mask`).
        batch_size: Transcripts per forward pass.
        shared: Token ids never counted as copied (see :func:`copied_target_mask`).

    Returns:
        The two accuracies (``nan`` for a group with no token) and their token counts.
    """
    import torch

    hits = {True: 0, False: 0}
    counts = {True: 0, False: 0}
    rows_right = 0
    was_training = model.training
    model.eval()
    for first in range(0, len(rows), batch_size):
        batch = rows[first : first + batch_size]
        width = max(len(r.input_ids) for r in batch)
        ids = torch.zeros(len(batch), width, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for i, r in enumerate(batch):
            ids[i, : len(r.input_ids)] = torch.tensor(r.input_ids)
            mask[i, : len(r.input_ids)] = 1
        with torch.no_grad():
            predicted = model(input_ids=ids, attention_mask=mask).logits[:, :-1].argmax(-1)
        for i, r in enumerate(batch):
            copied, missed = copied_target_mask(r, turn_start, shared), 0
            for position in range(1, len(r.input_ids)):
                if r.loss_mask[position]:
                    group, right = copied[position], int(predicted[i, position - 1]) == r.input_ids[position]
                    counts[group] += 1
                    hits[group] += right
                    missed += group and not right
            rows_right += missed == 0
    model.train(was_training)

    def rate(group: bool) -> float:
        return hits[group] / counts[group] if counts[group] else float("nan")

    return CopyTokenAccuracy(rate(True), rate(False), counts[True], counts[False], rows_right / max(1, len(rows)))
