"""``agentrl-envs synth``: the files and report it writes, determinism per seed, and its input errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentrl_envs.cli import main
from agentrl_envs.synth.dedupe import texts_in
from agentrl_envs.tasks.db.env import DBEnv


def test_synth_writes_train_files_and_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    assert main(["synth", "--task", "db,kg", "--n", "6", "--seed", "11", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    runs = {r["task"]: r for r in report["runs"]}
    assert set(runs) == {"db", "kg"}
    for run in runs.values():
        assert run["kept"] == 6 and run["oracle_success"] == 1.0 and run["max_overlap"] < 0.5
        assert run["kept_by_difficulty"] == {"1": 2, "2": 2, "3": 2}
        assert run["generated"] == run["kept"] + sum(run["rejected"].values())
    table = capsys.readouterr().out
    assert re.search(r"db\s+procedural\s+\d+\s+\d+\s+6\s+100%", table), table
    env = DBEnv(split="train", train_file=out / "db.jsonl")
    assert env.num_samples() == 6
    env.close()
    # the same seed writes the same files
    again = tmp_path / "again"
    assert main(["synth", "--task", "db,kg", "--n", "6", "--seed", "11", "--out", str(again), "--no-oracle-check"]) == 0
    for name in ("db.jsonl", "kg.json"):
        assert (out / name).read_bytes() == (again / name).read_bytes()


def test_exclude_draws_other_tasks_than_those_of_a_given_set(tmp_path: Path) -> None:
    """A held-out set synthesized with --exclude of a training set shares no task text with it, and is full."""
    train, heldout = tmp_path / "train", tmp_path / "heldout"
    common = ["--task", "db,kg", "--n", "5", "--seed", "3", "--difficulty", "1", "--no-oracle-check"]
    assert main(["synth", *common, "--out", str(train)]) == 0
    # The same seed proposes the training set's tasks first: every one of them must be passed over.
    assert main(["synth", *common, "--out", str(heldout), "--exclude", str(train)]) == 0
    runs = {r["task"]: r for r in json.loads((heldout / "report.json").read_text())["runs"]}
    for task, name in (("db", "db.jsonl"), ("kg", "kg.json")):
        assert runs[task]["kept"] == 5
        assert runs[task]["rejected"]["excluded"] >= 5
        assert not texts_in(task, [train / name]) & texts_in(task, [heldout / name])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "sql"], "Unknown synth task(s) ['sql']"),
        (["--difficulty", "4"], "--difficulty takes levels 1-3"),
        (["--generator", "llm"], "--generator llm needs --base-url"),
        (["--task", "kg", "--types", "counting"], "--types selects the question types of the procedural DB"),
        (["--exclude", "/nonexistent/train"], "--exclude /nonexistent/train: no such directory"),
    ],
)
def test_bad_arguments_say_what_to_do(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "--n", "1", *args]) == 2
    assert message in capsys.readouterr().err
