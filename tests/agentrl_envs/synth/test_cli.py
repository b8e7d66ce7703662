"""``agentrl-envs synth``: the files and report it writes, determinism per seed, and its input errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentrl_envs.cli import main
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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--task", "sql"], "Unknown synth task(s) ['sql']"),
        (["--difficulty", "4"], "--difficulty takes levels 1-3"),
        (["--generator", "llm"], "--generator llm needs --base-url"),
        (["--task", "kg", "--types", "counting"], "--types selects the question types of the procedural DB"),
    ],
)
def test_bad_arguments_say_what_to_do(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "--n", "1", *args]) == 2
    assert message in capsys.readouterr().err
