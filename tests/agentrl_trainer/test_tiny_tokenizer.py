"""The tiny tokenizer's ``words`` pre-tokenizer and the corpus it is trained on (what copying names needs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentrl_trainer.tiny import TinyModelSpec, build_tiny_tokenizer

CORPUS = [
    "The name of this table is Hotel Listings, and the headers of this table are hotel,city,nightly_rate.",
    "Question: What is the nightly_rate of Hotel River Porto?",
    "SELECT `nightly_rate` FROM `Hotel Listings` WHERE `hotel` = 'Hotel River Porto'",
]


def _ids(tokenizer, text: str) -> list[int]:  # noqa: ANN001
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def _contains(ids: list[int], part: list[int]) -> bool:
    return any(ids[i : i + len(part)] == part for i in range(len(ids) - len(part) + 1))


def test_words_pretokenizer_gives_a_name_the_same_tokens_in_prose_and_in_sql() -> None:
    words = build_tiny_tokenizer(CORPUS, vocab_size=400, pretokenizer="words")
    name = _ids(words, "Hotel Listings")
    assert _contains(_ids(words, CORPUS[0]), name) and _contains(_ids(words, CORPUS[2]), name)
    value = _ids(words, "Hotel River Porto")
    assert _contains(_ids(words, CORPUS[1]), value) and _contains(_ids(words, CORPUS[2]), value)
    for text in CORPUS:  # decoding is lossless (tool calls are parsed from decoded text)
        assert words.decode(_ids(words, text)) == text
    # GPT-2's cut glues the space to the word: " Hotel" in prose, "Hotel" after a backtick, so the name differs.
    bytelevel = build_tiny_tokenizer(CORPUS, vocab_size=400)
    assert not _contains(_ids(bytelevel, CORPUS[2]), _ids(bytelevel, " Hotel Listings"))


def test_an_unknown_pretokenizer_is_refused() -> None:
    with pytest.raises(ValueError, match="pretokenizer"):
        TinyModelSpec(pretokenizer="chars")


def test_heads_that_do_not_divide_the_model_are_refused_and_more_heads_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="3 attention heads .* do not divide hidden size 64"):
        TinyModelSpec(num_attention_heads=3)
    with pytest.raises(ValueError, match="key/value heads"):
        TinyModelSpec(num_attention_heads=8, num_key_value_heads=3)
    from transformers import AutoConfig

    from agentrl_trainer.tiny import build_tiny_model

    monkeypatch.setenv("AGENTRL_CACHE_DIR", str(tmp_path))
    path = build_tiny_model(CORPUS, TinyModelSpec(vocab_size=300, num_attention_heads=8, num_key_value_heads=4))
    config = AutoConfig.from_pretrained(path)
    assert (config.num_attention_heads, config.num_key_value_heads) == (8, 4)
    assert path != build_tiny_model(CORPUS, TinyModelSpec(vocab_size=300))  # the heads are part of the cache key


def test_the_default_pretokenizer_and_copy_stage_keep_the_cache_keys_of_models_built_before_the_options() -> None:
    from dataclasses import asdict

    from agentrl_trainer.tiny import _cache_path, _chat_template, _digest

    newer = ("pretokenizer", "copy_pretrain_steps")  # options added since: at their defaults they leave the key
    old_spec = {k: v for k, v in asdict(TinyModelSpec()).items() if k not in newer}
    old_key = _digest({"corpus": ["x"], "spec": old_spec, "template": _chat_template(), "v": 1})
    assert _cache_path(["x"], TinyModelSpec()).name == old_key
    assert _cache_path(["x"], TinyModelSpec(pretokenizer="words")).name != old_key
    assert _cache_path(["x"], TinyModelSpec(copy_pretrain_steps=10)).name != old_key


def test_the_tokenizer_corpus_has_the_db_oracle_moves_of_a_train_file(tmp_path: Path) -> None:
    """The DB oracle was built without the env's train_file, failed, and the corpus had no SQL at all."""
    from agentrl_trainer.cli import corpus_oracle_options
    from agentrl_trainer.corpus import task_corpus
    from agentrl_trainer.envs import make_env_factory

    command = [sys.executable, "-m", "agentrl_envs.cli", "synth", "--task", "db", "--n", "3", "--seed", "0"]
    subprocess.run([*command, "--difficulty", "1", "--out", str(tmp_path)], check=True, capture_output=True)
    env_kwargs = {"db": {"train_file": str(tmp_path / "db.jsonl")}}
    config = SimpleNamespace(
        tasks=["db"], env_kwargs=env_kwargs, sft_warmup={"oracle_options": {"db": {"show_sql": True}}}
    )
    options = corpus_oracle_options(config)
    assert options == {"db": {"train_file": str(tmp_path / "db.jsonl"), "show_sql": True}}
    texts = task_corpus(make_env_factory(env_kwargs=env_kwargs), ["db"], "train", oracle_options=options)
    assert sum(t.startswith('{"name": "commit_final_answer"') for t in texts) == 3  # one oracle episode per sample
    assert any('"execute_sql"' in t and ("SELECT" in t or "INSERT" in t) for t in texts)
