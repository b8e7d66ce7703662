"""The copied-token metric: which written tokens count as copied from the prompt, and their accuracy."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from agentrl_trainer.sft.copy_metric import copied_target_mask, copy_token_accuracy, shared_prompt_tokens
from agentrl_trainer.sft.render import RenderedTranscript, render_transcript
from agentrl_trainer.tiny import build_tiny_tokenizer

START = 1  # the turn-start token of these hand-made transcripts


def transcript() -> RenderedTranscript:
    # system (5, 6 and 9 are shared), the last user message (5 shared, 7 and 8 its own), the generation prompt,
    # then the written tokens: 7, 9, 8, 6
    ids = [START, 5, 6, 9, START, 5, 7, 8, START, 3, 7, 9, 8, 6]
    return RenderedTranscript(ids, [0] * 10 + [1] * 4, 10)


def test_copied_tokens_are_written_and_occur_in_the_last_user_message_only() -> None:
    mask = copied_target_mask(transcript(), START)
    assert [i for i, copied in enumerate(mask) if copied] == [10, 12]  # 7 and 8; not 9 or 6 (in the system prompt)


def test_a_prompt_without_a_user_turn_is_refused() -> None:
    with pytest.raises(ValueError, match="turn-start tokens"):
        copied_target_mask(RenderedTranscript([START, 4, 5], [0, 0, 1], 2), START)


class Always:
    """A stand-in causal LM that predicts ``token`` at every position."""

    training = False

    def __init__(self, token: int) -> None:
        self.token = token

    def eval(self) -> None: ...

    def train(self, mode: bool) -> None: ...

    def __call__(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> SimpleNamespace:
        logits = torch.zeros(*input_ids.shape, 16)
        logits[..., self.token] = 1.0
        return SimpleNamespace(logits=logits)


def test_accuracy_is_counted_apart_for_copied_and_other_tokens() -> None:
    rows = [transcript(), transcript()]
    result = copy_token_accuracy(Always(7), rows, START, batch_size=1)
    assert (result.copied, result.other, result.copied_tokens, result.other_tokens) == (0.5, 0.0, 4, 4)
    assert result.rows_all_copied == 0.0  # 8 is missed in each
    assert copy_token_accuracy(Always(9), rows, START).other == 0.5
    assert math.isnan(copy_token_accuracy(Always(9), [RenderedTranscript([START, 2, START, 3, 4], [0, 0, 0, 0, 1], 4)],
                                          START).copied)  # fmt: skip


def test_on_a_rendered_db_style_transcript_the_names_are_the_copied_tokens() -> None:
    corpus = ["The table is Hotel Listings, headers city. Answer with SQL. SELECT `city` FROM `Hotel Listings`"]
    tokenizer = build_tiny_tokenizer(corpus, vocab_size=400, pretokenizer="words")  # whole words: one token each
    messages = [
        {"role": "system", "content": "Answer with SQL. SELECT"},
        {"role": "user", "content": "The table is Hotel Listings, headers city."},
        {"role": "assistant", "content": "SELECT `city` FROM `Hotel Listings`"},
    ]
    rendered = render_transcript(tokenizer, messages, None)
    mask = copied_target_mask(rendered, tokenizer.convert_tokens_to_ids("<|im_start|>"))
    copied = tokenizer.decode([t for t, m in zip(rendered.input_ids, mask, strict=True) if m])
    assert "Hotel" in copied and "Listings" in copied and "city" in copied
    assert "SELECT" not in copied and "`" not in copied  # in the system prompt: a model can learn them by heart


def test_tokens_shared_by_another_rendering_are_never_copied() -> None:
    assert shared_prompt_tokens(transcript(), START) == {START, 5, 6, 9}
    mask = copied_target_mask(transcript(), START, shared=frozenset({8}))
    assert [i for i, copied in enumerate(mask) if copied] == [10]
