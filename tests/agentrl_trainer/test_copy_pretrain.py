"""Copy pre-training: a fresh tiny model learns to copy spans it never saw (the circuit DB SFT did not grow)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from agentrl_trainer.copy_pretrain import (
    CopyPretrainSettings,
    copy_accuracy,
    copy_batch,
    copy_pretrain,
    copyable_token_ids,
)
from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model, load_tokenizer

CORPUS = [
    "The name of this table is Hotel Listings, and the headers of this table are hotel,city,nightly_rate.",
    "Question: What is the nightly_rate of Hotel River Porto? Add a new row to the Library Catalogue table.",
    "SELECT `nightly_rate` FROM `Hotel Listings` WHERE `hotel` = 'Hotel River Porto'",
    "INSERT INTO `Library Catalogue` (`title`, `author`, `pages`) VALUES ('Thistle Kettle', 'Ann Rowe', 312)",
]
SETTINGS = CopyPretrainSettings(
    batch_size=32, min_span=4, max_span=12, spans_per_sequence=2, max_gap=16, learning_rate=1e-2
)


def test_a_copy_batch_scores_only_the_repeat_after_its_first_token() -> None:
    tokens = list(range(10, 60))
    ids, mask, labels = copy_batch(random.Random(0), tokens, separator=2, pad=0, settings=SETTINGS)
    gaps = set()
    for row, row_mask, row_labels in zip(ids.tolist(), mask.tolist(), labels.tolist(), strict=True):
        length = sum(row_mask)
        assert row[length:] == [0] * (len(row) - length) and all(row_mask[:length])
        seps = [i for i, t in enumerate(row[:length]) if t == 2]
        assert len(seps) == SETTINGS.spans_per_sequence
        start = 0
        for sep in seps:  # span gap SEP span: the labels are the repeat, less its first token
            end = sep + 2
            while end < len(row_labels) and row_labels[end] != -100:
                end += 1
            span_length = end - sep - 1
            span = row[start : start + span_length]
            assert SETTINGS.min_span <= span_length <= SETTINGS.max_span
            assert row[sep + 1 : sep + 1 + span_length] == span
            assert row_labels[start : sep + 2] == [-100] * (sep + 2 - start)
            assert row_labels[sep + 2 : sep + 1 + span_length] == span[1:]
            gaps.add(sep - start - span_length)
            start = sep + 1 + span_length
    assert min(gaps) >= 0 and max(gaps) <= SETTINGS.max_gap and len(gaps) > 5  # the copy distance varies


def test_copy_pretraining_makes_a_fresh_tiny_model_copy_unseen_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv("AGENTRL_CACHE_DIR", str(tmp_path))
    spec = TinyModelSpec(vocab_size=300, hidden_size=64, intermediate_size=128, pretokenizer="words")
    plain = build_tiny_model(CORPUS, spec)
    tokenizer = load_tokenizer(plain)
    held_out = copy_batch(  # spans drawn with a seed the stage never uses
        random.Random(1234), copyable_token_ids(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id, SETTINGS
    )
    model = AutoModelForCausalLM.from_pretrained(plain)
    before = copy_accuracy(model, held_out)
    losses = copy_pretrain(model, tokenizer, STEPS, seed=0, settings=SETTINGS)
    after = copy_accuracy(model, held_out)
    # Random spans behind a random gap: only finding the span by content beats chance (1 in ~290 tokens). Measured
    # 0.006 -> 0.040 here (~470 scored tokens: ~19 copied against ~2 by chance; docs/benchmarks.md, "copy
    # pre-training", has the full-size stage).
    assert before < 0.015, before
    assert after > 0.025 and after > 4 * before, (before, after, losses[-1])


def test_the_stage_is_part_of_the_tiny_models_cache_key_and_changes_its_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv("AGENTRL_CACHE_DIR", str(tmp_path))
    spec = TinyModelSpec(vocab_size=300, pretokenizer="words")
    plain = build_tiny_model(CORPUS, spec)
    trained = build_tiny_model(CORPUS, replace(spec, copy_pretrain_steps=3))
    assert trained != plain and build_tiny_model(CORPUS, replace(spec, copy_pretrain_steps=3)) == trained  # reused
    a, b = (AutoModelForCausalLM.from_pretrained(p).state_dict() for p in (plain, trained))
    assert not torch.equal(a["model.layers.0.self_attn.q_proj.weight"], b["model.layers.0.self_attn.q_proj.weight"])


def test_the_stages_recipe_is_part_of_the_cache_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentrl_trainer import copy_pretrain as module
    from agentrl_trainer.tiny import _cache_path

    spec = TinyModelSpec(copy_pretrain_steps=10)
    key = _cache_path(["x"], spec)
    monkeypatch.setattr(module, "CopyPretrainSettings", lambda: CopyPretrainSettings(learning_rate=1e-4))
    assert _cache_path(["x"], spec) != key  # a model trained with another recipe is not reused


STEPS = 400


def test_negative_copy_pretraining_steps_are_refused() -> None:
    with pytest.raises(ValueError, match="copy_pretrain_steps"):
        TinyModelSpec(copy_pretrain_steps=-1)
