"""Near-duplicates of test/dev samples are found by word 3-gram Jaccard on question and schema."""

from __future__ import annotations

import pytest

from agentrl_envs.core.data import DataRoot
from agentrl_envs.synth.dedupe import THRESHOLD, OverlapIndex, reference_texts, shingles, task_text


def test_shingles_are_word_trigrams() -> None:
    assert shingles("How many Rows, are there") == {
        ("how", "many", "rows"),
        ("many", "rows", "are"),
        ("rows", "are", "there"),
    }
    assert shingles("two words") == {("two",), ("words",)}


@pytest.mark.parametrize("task", ["db", "os", "kg"])
def test_every_test_and_dev_sample_is_its_own_near_duplicate(data: DataRoot, task: str) -> None:
    texts = reference_texts(data, task)
    assert len(texts) == {"db": 360, "os": 144 + 26, "kg": 170}[task]
    index = OverlapIndex(texts)
    assert all(index.max_similarity(t) == 1.0 for t in texts[:: max(1, len(texts) // 20)])


def test_a_reworded_dev_question_on_the_same_table_is_dropped_and_a_new_one_is_not(data: DataRoot) -> None:
    sample = dict(data.jsonl("data/dbbench/dev.jsonl")[0])
    index = OverlapIndex(reference_texts(data, "db"))
    reworded = dict(sample, description=sample["description"].replace("What is", "Tell me"))
    assert index.max_similarity(task_text("db", reworded)) >= THRESHOLD
    fresh = dict(sample, description="How many employees work in Lisbon?")
    fresh["table"] = {
        "table_name": "staff",
        "table_info": {"columns": [{"name": "Name"}, {"name": "City"}], "rows": []},
    }
    assert index.max_similarity(task_text("db", fresh)) < THRESHOLD
