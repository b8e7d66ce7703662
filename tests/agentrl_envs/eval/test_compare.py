"""``agentrl-eval compare``: a per-task table and a PNG of several runs; runs that differ are refused."""

import json
from pathlib import Path

import pytest

from agentrl_envs.eval.cli import main


@pytest.fixture
def two_runs(toy: str, tmp_path: Path) -> tuple[Path, Path]:
    oracle, random = tmp_path / "oracle", tmp_path / "random"
    assert main(["--tasks", toy, "--agent", "oracle", "--runs", "2", "--output", str(oracle)]) == 0
    assert main(["--tasks", toy, "--agent", "random", "--runs", "2", "--output", str(random)]) == 0
    return oracle, random


def test_compare_prints_a_table_and_writes_a_png(two_runs: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    capsys.readouterr()
    plot = tmp_path / "plots" / "compare.png"
    assert main(["compare", *map(str, two_runs), "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if "toy" in line]
    assert "oracle" in rows[0] and "100.0%" in rows[0] and "pass@2 100.0%" in rows[0] and "upstream" in rows[0]
    assert "random" in rows[1] and "0.0%" in rows[1]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size > 5000


def test_runs_on_other_data_or_fidelity_are_refused_unless_allowed(
    two_runs: tuple[Path, Path], tmp_path: Path, capsys
) -> None:
    oracle, random = two_runs
    results = json.loads((random / "results.json").read_text())
    results["tasks"]["toy"]["fidelity"] = "emulated"
    results["config"]["data"]["commit"] = "0000000"
    (random / "results.json").write_text(json.dumps(results))
    capsys.readouterr()
    assert main(["compare", str(oracle), str(random), "--no-plot"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "not comparable (data commit: {'oracle': None, 'random': '0000000'}" in err  # toy reads no data
    assert "toy fidelity: {'oracle': 'upstream', 'random': 'emulated'}" in err and "--allow-mismatch" in err
    assert main(["compare", str(oracle), str(random), "--no-plot", "--allow-mismatch"]) == 0
    assert main(["compare", str(oracle), str(tmp_path / "missing"), "--no-plot"]) == 2
    assert "cannot be read as an agentrl-eval results file" in capsys.readouterr().err
