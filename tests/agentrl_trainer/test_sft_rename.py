"""Random names in SFT transcripts (``sft_warmup.random_names``): a model can only copy them from the prompt."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentrl_envs.tasks.db.data import parse_sample
from agentrl_trainer.sft.rename import rename_messages, word_pieces

PIECES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]


def _hotel_sample() -> Any:
    row = {
        "description": "Add a hotel.",
        "type": ["INSERT"],
        "table": {
            "table_name": "Hotel Listings",
            "table_info": {
                "columns": [{"name": "hotel"}, {"name": "city"}, {"name": "rate"}, {"name": "name"}],
                "rows": [["Hotel Oasis", "Oslo", "266", "user"]],
            },
        },
        "label": ["INSERT INTO `Hotel Listings` (`hotel`, `city`, `rate`) VALUES ('Hotel Oasis Oslo', 'Rome', '5')"],
    }
    return parse_sample(0, row, "test")


def _conversation() -> list[dict[str, Any]]:
    arguments = {"query": "SELECT `rate` FROM `Hotel Listings` WHERE `hotel` = 'Hotel Oasis' AND `city` = 'Oslo'"}
    return [
        {"role": "system", "content": "You are a helpful user of Hotel Listings and the city of Oslo."},
        {"role": "user", "content": "The table is Hotel Listings, heads hotel,city,rate,name. Add 'Hotel Oasis Oslo'"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "execute_sql", "arguments": json.dumps(arguments)}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "execute_sql", "content": "[('266',)]"},
    ]  # fmt: skip


def test_a_db_sample_names_its_table_columns_and_text_values_but_not_numbers() -> None:
    names = _hotel_sample().copyable_names()
    assert names == {
        "Hotel Listings": "table",
        "hotel": "column",
        "city": "column",
        "rate": "column",
        "name": "column",
        "Hotel Oasis": "value",
        "Oslo": "value",
        "user": "value",
        "Hotel Oasis Oslo": "value",
        "Rome": "value",
    }  # fmt: skip  (266 and 5 are numbers: kept; the INSERT's new row is only in its label)


def test_random_names_replace_every_name_consistently_and_leave_structure_and_system_prompt() -> None:
    conversation = _conversation()
    renamed = rename_messages(conversation, _hotel_sample().copyable_names(), random.Random(0), PIECES)
    assert renamed[0] == conversation[0]  # the instructions stay as written
    text = json.dumps(renamed[1:])
    for name in ("Hotel Listings", "hotel", "city", "Oslo", "Hotel Oasis", "Hotel Oasis Oslo"):
        assert not re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text), name
    assert "266" in text  # numbers are kept
    # The same new table name in the question and in the SQL the model must write.
    table = re.search(r"The table is ([A-Za-z ]+),", renamed[1]["content"])
    assert table is not None
    table = table.group(1)
    assert f"FROM `{table}`" in json.loads(renamed[2]["tool_calls"][0]["function"]["arguments"])["query"]
    # A column called "name" and a value "user" rename texts only, never a role, a key or the tool's name.
    assert [m["role"] for m in renamed] == ["system", "user", "assistant", "tool"]
    assert renamed[2]["tool_calls"][0]["function"]["name"] == "execute_sql" and renamed[3]["name"] == "execute_sql"
    assert conversation == _conversation()  # the input is not modified
    again = rename_messages(conversation, _hotel_sample().copyable_names(), random.Random(0), PIECES)
    other = rename_messages(conversation, _hotel_sample().copyable_names(), random.Random(1), PIECES)
    assert again == renamed and other != renamed  # deterministic per seed, new names per seed


def test_word_pieces_are_the_vocabularys_lower_case_words(tokenizer: Any) -> None:
    pieces = word_pieces(tokenizer)
    assert len(pieces) >= 10 and all(p.isalpha() and p.islower() and len(p) >= 3 for p in pieces)
    assert all(len(tokenizer(p, add_special_tokens=False)["input_ids"]) <= 2 for p in pieces[:50])


@pytest.fixture(scope="module")
def db_transcripts(tmp_path_factory: Any) -> list[Any]:
    """DB oracle transcripts of 3 synthesized tasks, recorded through the real env."""
    from agentrl_trainer.envs import make_env_factory
    from agentrl_trainer.sft.transcripts import record_oracle

    tasks = str(_db_tasks(tmp_path_factory))  # the oracle reads the file too
    return record_oracle(make_env_factory(env_kwargs={"db": {"train_file": tasks}}), "db", "train", train_file=tasks)


def _db_tasks(tmp_path_factory: Any) -> Path:
    """3 synthesized level-1 DB tasks (``agentrl-envs synth``)."""
    out = tmp_path_factory.mktemp("synth")
    command = [sys.executable, "-m", "agentrl_envs.cli", "synth", "--task", "db", "--n", "3", "--seed", "0",
               "--difficulty", "1", "--out", str(out)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return out / "db.jsonl"


def test_oracle_transcripts_carry_their_tasks_names_and_render_renamed_per_seed(
    db_transcripts: list[Any], tokenizer: Any
) -> None:
    from agentrl_trainer.sft.warmup import sft_rows

    assert db_transcripts and all(t.names for t in db_transcripts)
    plain = sft_rows(tokenizer, db_transcripts)
    first, second = (sft_rows(tokenizer, db_transcripts, random_names=1.0, seed=s) for s in (0, 1))
    assert len(plain) == len(first) == len(second) == len(db_transcripts)
    assert all(a["input_ids"] != b["input_ids"] for a, b in zip(plain, first, strict=True))
    assert all(a["input_ids"] != b["input_ids"] for a, b in zip(first, second, strict=True))
    assert sft_rows(tokenizer, db_transcripts, random_names=1.0, seed=0) == first  # deterministic
    # Only the names changed: the system prompt and tools (the start of every row) are the same tokens.
    turn_start = tokenizer.convert_tokens_to_ids("<|im_start|>")
    user = [i for i, token in enumerate(plain[0]["input_ids"]) if token == turn_start][1]
    assert user > 500 and first[0]["input_ids"][:user] == plain[0]["input_ids"][:user]


def test_the_passes_to_render_follow_the_epochs_or_steps_and_the_setting_is_checked(tmp_path: Any) -> None:
    from agentrl_trainer.sft.config import SFTWarmupConfig
    from agentrl_trainer.sft.warmup import _warmup_identity, renamed_passes

    warmup = SFTWarmupConfig.from_mapping({"random_names": 0.5, "num_train_epochs": 2.5})
    assert renamed_passes(warmup, 100) == 3  # 3 renderings, each trained 2.5 / 3 times
    steps = SFTWarmupConfig.from_mapping({"random_names": 0.5, "max_steps": 30, "per_device_train_batch_size": 8})
    assert renamed_passes(steps, 100) == 3  # 240 rows, of 100 per pass
    assert renamed_passes(SFTWarmupConfig.from_mapping({"num_train_epochs": 4}), 100) == 1  # the same rows
    with pytest.raises(ValueError, match="random_names is a share of transcripts, 0 to 1"):
        SFTWarmupConfig.from_mapping({"random_names": 2})
    with pytest.raises(ValueError, match="random_names needs source: oracle"):
        SFTWarmupConfig.from_mapping({"random_names": 0.5, "source": str(tmp_path / "episodes.jsonl")})
    # Checkpoints cached before the setting existed keep their keys: its default is left out of the key.
    assert "random_names" not in _warmup_identity(SFTWarmupConfig()) and _warmup_identity(warmup)["random_names"]


def _warmup_rows(monkeypatch: Any, transcripts: list[Any], tokenizer: Any, tmp_path: Path, **warmup: Any) -> Any:
    """What the warm-up stage hands to training (rows, passes) for ``transcripts``; the training is skipped."""
    from agentrl_trainer import AgentRLConfig
    from agentrl_trainer.sft import warmup as stage

    handed: dict[str, Any] = {}

    def train(model_path: str, tokenizer: Any, rows: Any, args: Any, settings: Any, out: Path, passes: int) -> None:
        handed.update(rows=rows, passes=passes, epochs=settings.num_train_epochs / passes)
        out.mkdir(parents=True)

    monkeypatch.setattr(stage, "load_transcripts", lambda *_: transcripts)
    monkeypatch.setattr(stage, "_train", train)
    config = AgentRLConfig(
        output_dir=str(tmp_path / "run"), tasks=sorted({t.task for t in transcripts}), report_to="none",
        sft_warmup={**warmup, "output_dir": str(tmp_path / "warm")},
    )  # fmt: skip
    stage.run_sft_warmup("unused", tokenizer, config, env_factory=object())
    return handed


def test_a_warmup_renders_new_names_at_every_pass(
    db_transcripts: list[Any], tokenizer: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    handed = _warmup_rows(monkeypatch, db_transcripts, tokenizer, tmp_path, random_names=1.0, num_train_epochs=2)
    rows, n = handed["rows"], len(db_transcripts)
    assert handed["passes"] == 2 and handed["epochs"] == 1.0 and len(rows) == 2 * n
    assert all(rows[i]["input_ids"] != rows[n + i]["input_ids"] for i in range(n))  # other names in pass 2
    same = _warmup_rows(monkeypatch, db_transcripts, tokenizer, tmp_path / "plain", num_train_epochs=2)
    assert same["passes"] == 1 and len(same["rows"]) == n  # without renaming, epochs repeat the same rows


def test_random_names_on_tasks_without_names_is_an_error_that_says_so(
    tokenizer: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    from agentrl_trainer.sft.transcripts import Transcript

    toy = [Transcript("toy", "test", 0, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}],
                      None, 1.0)]  # fmt: skip
    with pytest.raises(ValueError, match=r"no task of \['toy'\] declares names to rename"):
        _warmup_rows(monkeypatch, toy, tokenizer, tmp_path, random_names=1.0, max_steps=1)
