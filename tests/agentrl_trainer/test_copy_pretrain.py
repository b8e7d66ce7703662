"""Copy pre-training: a fresh tiny model learns to copy spans it never saw (the circuit DB SFT did not grow)."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from agentrl_trainer.copy_pretrain import (
    CopyPretrainSettings,
    CopyRows,
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
PACKED = CopyRows(batch_size=32, min_span=4, max_span=12, spans_per_sequence=2, max_gap=16)


def test_a_copy_batch_scores_only_the_repeat_after_its_first_token() -> None:
    tokens = list(range(10, 60))
    ids, mask, labels = copy_batch(random.Random(0), tokens, pad=0, rows=PACKED)
    gaps = set()
    for row, row_mask, row_labels in zip(ids.tolist(), mask.tolist(), labels.tolist(), strict=True):
        length = sum(row_mask)
        assert row[length:] == [0] * (len(row) - length) and all(row_mask[:length])
        scored = [i for i, label in enumerate(row_labels) if label != -100]
        assert all(row_labels[i] == row[i] for i in scored)  # a label is its own position's token (the model shifts)
        repeats = [i - 1 for i in scored if i - 1 not in scored]  # each scored run follows its repeat's first token
        assert len(repeats) == PACKED.spans_per_sequence
        start = 0
        for repeat in repeats:  # span gap span: the span's first copy opens the stretch, its repeat closes it
            end = repeat + 1
            while end < len(row_labels) and row_labels[end] != -100:
                end += 1
            span = row[repeat:end]
            assert PACKED.min_span <= len(span) <= PACKED.max_span
            assert row[start : start + len(span)] == span
            assert row_labels[start : repeat + 1] == [-100] * (repeat + 1 - start)
            gaps.add(repeat - start - len(span))
            start = end
    assert min(gaps) >= 0 and max(gaps) <= PACKED.max_gap and len(gaps) > 5  # the copy distance varies


def test_copy_pretraining_makes_a_fresh_tiny_model_copy_unseen_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv("AGENTRL_CACHE_DIR", str(tmp_path))
    spec = TinyModelSpec(vocab_size=300, hidden_size=64, intermediate_size=128, pretokenizer="words")
    plain = build_tiny_model(CORPUS, spec)
    tokenizer = load_tokenizer(plain)
    settings = CopyPretrainSettings(long_share=0.0)  # the stage's short rows, where the circuit forms
    held_out = copy_batch(  # runs drawn with a seed the stage never uses
        random.Random(1234), copyable_token_ids(tokenizer), tokenizer.pad_token_id, settings.short
    )
    model = AutoModelForCausalLM.from_pretrained(plain)
    before = copy_accuracy(model, held_out)
    losses = copy_pretrain(model, tokenizer, STEPS, seed=0, settings=settings)
    after = copy_accuracy(model, held_out)
    # Random runs of varying length: only finding the run by its content beats chance (1 in ~295 tokens). The
    # induction head forms abruptly: measured 0.006 before, 0.05 at step 350, 0.86 at 400, 0.96 at 500 here.
    assert before < 0.015, before
    assert after > 0.5, (before, after, losses[-1])


def test_the_last_share_of_the_steps_trains_on_prompt_length_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from transformers import AutoModelForCausalLM

    from agentrl_trainer import copy_pretrain as module

    monkeypatch.setenv("AGENTRL_CACHE_DIR", str(tmp_path))
    path = build_tiny_model(CORPUS, TinyModelSpec(vocab_size=300, pretokenizer="words"))
    widths: list[int] = []

    def recording(*args: object, **kwargs: object) -> tuple:
        batch = copy_batch(*args, **kwargs)  # type: ignore[arg-type]
        widths.append(batch[0].shape[1])
        return batch

    monkeypatch.setattr(module, "copy_batch", recording)
    settings = CopyPretrainSettings(long=CopyRows(batch_size=2, spans_per_sequence=16, max_gap=48), long_share=0.3)
    copy_pretrain(AutoModelForCausalLM.from_pretrained(path), load_tokenizer(path), 10, settings=settings)
    assert len(widths) == 10
    assert all(w <= 2 * settings.short.max_span for w in widths[:7])  # one run and its repeat
    assert all(w >= 16 * 2 * settings.long.min_span for w in widths[7:])  # 16 of them, with gaps: prompt length


def test_a_long_share_outside_0_to_1_is_refused() -> None:
    with pytest.raises(ValueError, match="long_share"):
        CopyPretrainSettings(long_share=1.5)


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


STEPS = 500


def test_negative_copy_pretraining_steps_are_refused() -> None:
    with pytest.raises(ValueError, match="copy_pretrain_steps"):
        TinyModelSpec(copy_pretrain_steps=-1)
