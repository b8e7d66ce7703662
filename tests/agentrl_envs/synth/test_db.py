"""The DB generator: deterministic per seed, every kept task solved by the oracle and refused when empty or
wrong, and the checks that drop bad tasks (a wrong claimed label, a filter that matches nothing)."""

from __future__ import annotations

import json
from itertools import islice
from pathlib import Path

import pytest

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import DataError
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.synth.db import DBAdapter, DBGenerator, complete_sample
from agentrl_envs.synth.dedupe import THRESHOLD
from agentrl_envs.synth.pipeline import synthesize
from agentrl_envs.synth.types import Candidate
from agentrl_envs.synth.validate import play, validate
from agentrl_envs.tasks.db.data import Table, load_samples
from agentrl_envs.tasks.db.grader import compare_results
from agentrl_envs.tasks.db.oracle import values_only_insert


def _draw(data: DataRoot, seed: int, level: int, n: int = 5) -> list[dict]:
    return [c.sample for c in islice(DBGenerator(data, seed=seed).candidates(level), n)]


def test_generation_is_deterministic_per_seed(data: DataRoot) -> None:
    assert _draw(data, 7, 2) == _draw(data, 7, 2)
    assert _draw(data, 7, 2) != _draw(data, 8, 2)


@pytest.mark.parametrize("level", [1, 2, 3])
def test_levels_grow_tables(data: DataRoot, level: int) -> None:
    samples = _draw(data, 0, level, n=20)
    columns = {len(s["heads"]) for s in samples}
    rows = {len(s["table"]["table_info"]["rows"]) for s in samples}
    assert {1: columns <= {3, 4}, 2: columns <= {4, 5}, 3: columns <= {5, 6}}[level]
    assert {1: max(rows) <= 10, 2: min(rows) >= 10, 3: min(rows) >= 20}[level]
    assert all(s["difficulty"] == level for s in samples)


def test_a_run_keeps_only_tasks_the_env_validates(data: DataRoot, tmp_path: Path) -> None:
    out = tmp_path / "db.jsonl"
    result = synthesize(
        DBAdapter(data), DBGenerator(data, seed=3), name="procedural", n=12, difficulties=(1, 2, 3), out=out
    )
    counts = result.counts
    assert counts.kept == 12 and dict(counts.by_difficulty) == {1: 4, 2: 4, 3: 4}
    assert counts.generated == counts.validated + counts.rejected["duplicate"] + counts.rejected["near_duplicate"]
    assert counts.validated - counts.kept == sum(v for k, v in counts.rejected.items() if "duplicate" not in k)
    assert counts.oracle_success == 1.0
    assert counts.max_overlap < THRESHOLD
    # the file is the upstream format: the env's own loader reads it and the levels come easiest first
    samples = load_samples(data, "train", out)
    assert [s.raw["difficulty"] for s in samples] == sorted(s.raw["difficulty"] for s in samples)
    assert all(s.ground_truth for s in samples)


def _sample(data: DataRoot, query_type: str, description: str, sql: str) -> dict:
    generator = DBGenerator(data, seed=0)
    sample = next(generator.candidates(1)).sample
    table = sample["table"]["table_name"]
    sample.update(description=description, type=[query_type], label=[sql] if query_type == "DELETE" else [])
    sample.pop("sql", None)
    sample.pop("answer_md5", None)
    if query_type != "DELETE":
        sample["sql"] = {"query": sql.format(table=table), "length": len(sql)}
    else:
        sample["label"] = [sql.format(table=table)]
    return sample


def test_validation_rejects_tasks_an_empty_answer_would_pass(data: DataRoot) -> None:
    first = _sample(data, "counting", "How many rows have no name?", "SELECT COUNT(*) FROM `{table}` WHERE 1 = 0")
    no_op = _sample(data, "DELETE", "Delete nothing.", "DELETE FROM `{table}` WHERE 1 = 0")
    good = _sample(data, "counting", "How many rows are there?", "SELECT COUNT(*) FROM `{table}`")
    candidates = [Candidate("db", "procedural", 1, s) for s in (first, no_op, good)]
    verdicts = validate(DBAdapter(data), candidates)
    assert [v.reason if v else None for v in verdicts] == ["empty_accepted", "empty_accepted", None]


def test_a_claimed_label_must_agree_with_the_sql(data: DataRoot) -> None:
    sample = _sample(data, "counting", "How many rows are there?", "SELECT COUNT(*) FROM `{table}`")
    rows = len(sample["table"]["table_info"]["rows"])
    assert complete_sample(dict(sample, label=[str(rows + 3)])).reason == "label_mismatch"
    assert complete_sample(dict(sample, label=[str(rows)])) is None
    broken = dict(sample, sql={"query": "SELECT nope FROM nowhere"})
    assert complete_sample(broken).reason == "reference_sql_error"


def test_oracle_can_show_recovery_from_an_sql_error(data: DataRoot, tmp_path: Path) -> None:
    from agentrl_envs.tasks.db.env import DBEnv

    candidates = [c for c in islice(DBGenerator(data, seed=1).candidates(2), 6)]
    for c in candidates:
        assert complete_sample(c.sample) is None
    path = DBAdapter(data).write([c.sample for c in candidates], tmp_path / "db.jsonl")
    env = DBEnv(split="train", train_file=path)
    oracle = load_oracle("db", split="train", train_file=str(path), recovery=True)
    try:
        for index in range(len(candidates)):
            reward, _, transcript = play(env, oracle, index)
            assert reward == 1.0
            tools = [m["content"] for m in transcript if m["role"] == "tool"]
            assert tools[0].startswith("1146 (42S02)"), tools  # MySQL's "table doesn't exist"
            assert not tools[1].startswith("Error"), tools
    finally:
        env.close()
    assert json.loads(path.read_text().splitlines()[0])["source"] == "agentrl-synth"


def test_oracle_can_insert_without_the_column_list(data: DataRoot, tmp_path: Path) -> None:
    from agentrl_envs.tasks.db.env import DBEnv

    inserts = [c.sample for c in islice(DBGenerator(data, seed=2, types=["INSERT", "other"]).candidates(1), 6)]
    assert {s["type"][0] for s in inserts} == {"INSERT", "other"}
    assert all(complete_sample(sample) is None for sample in inserts)  # labels and the gold hashes
    path = DBAdapter(data).write(inserts, tmp_path / "db.jsonl")
    env = DBEnv(split="train", train_file=path)
    oracle = load_oracle("db", split="train", train_file=str(path), insert_values_only=True)
    try:
        for index, sample in enumerate(inserts):
            reward, _, transcript = play(env, oracle, index)
            assert reward == 1.0  # the shorter statement writes the same row: the gold table hash
            sql = [json.loads(m["tool_calls"][0]["function"]["arguments"]).get("query") for m in transcript
                   if m["role"] == "assistant" and m.get("tool_calls")]  # fmt: skip
            if sample["type"][0] == "INSERT":
                table = sample["table"]["table_name"]
                assert sql[0].startswith(f"INSERT INTO `{table}` VALUES ('"), sql
                assert sql[0].endswith(sample["label"][0].split(" VALUES ", 1)[1]), sql
    finally:
        env.close()


def test_values_only_insert_leaves_other_statements_alone() -> None:
    table = Table("t", ("a", "b"), ())
    assert values_only_insert("INSERT INTO `t` (`a`, `b`) VALUES ('1', '2')", (table,)) == (
        "INSERT INTO `t` VALUES ('1', '2')"
    )
    for kept in (
        "INSERT INTO `t` (`b`, `a`) VALUES ('2', '1')",  # another order: the list says where values go
        "INSERT INTO `t` (`a`) VALUES ('1')",  # a partial list
        "INSERT INTO t (a, b) VALUES ('1', '2')",  # other quoting
        "UPDATE `t` SET `a` = '1'",
    ):
        assert values_only_insert(kept, (table,)) == kept


@pytest.mark.mariadb
def test_mariadb_computes_the_same_gold_answers(data: DataRoot, mariadb_server: object) -> None:
    """MariaDB's DECIMAL results (``Decimal('397.0000')``) become labels; hashes agree with SQLite's."""
    averages = _sample(data, "aggregation-AVG", "Average row count?", "SELECT AVG(1) FROM `{table}`")
    generated = [c.sample for c in islice(DBGenerator(data, seed=9).candidates(2), 8)]
    for sample in [averages, *generated]:
        on_sqlite, on_mariadb = json.loads(json.dumps(sample)), json.loads(json.dumps(sample))
        assert complete_sample(on_sqlite) is None and complete_sample(on_mariadb, backend="mariadb") is None
        assert on_sqlite.get("answer_md5") == on_mariadb.get("answer_md5")
        assert compare_results(on_mariadb["label"], on_sqlite["label"], sample["type"][0])
    assert float(on_mariadb_label(averages)) == 1.0


def on_mariadb_label(sample: dict) -> str:
    copy = json.loads(json.dumps(sample))
    assert complete_sample(copy, backend="mariadb") is None
    return copy["label"][0]


def test_a_types_filter_leaves_the_other_types_out_of_the_same_stream(data: DataRoot) -> None:
    everything = _draw(data, 5, 1, n=40)
    kept = [s for s in everything if s["type"][0] != "INSERT"]
    types = ["other", "counting", "aggregation-MIN", "aggregation-MAX"]
    assert [c.sample for c in islice(DBGenerator(data, seed=5, types=types).candidates(1), len(kept))] == kept


def test_a_types_filter_says_what_it_cannot_draw(data: DataRoot) -> None:
    with pytest.raises(DataError, match=r"Unknown DB question type\(s\) \['insert'\]"):
        DBGenerator(data, types=["insert"])
    with pytest.raises(DataError, match="No level-2 DB question has a type in \\['INSERT'\\]"):
        next(DBGenerator(data, types=["INSERT"]).candidates(2))
