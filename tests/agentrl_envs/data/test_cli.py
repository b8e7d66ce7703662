"""``agentrl-envs data fetch | import | status`` on the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentrl_envs.cli import main

from .conftest import rewrite_archive


def test_fetch_then_status(upstream_archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dest = tmp_path / "root"
    assert main(["data", "fetch", "--from", str(upstream_archive), "--dest", str(dest), "--no-progress"]) == 0
    assert main(["data", "status", "--data-root", str(dest)]) == 0
    out = capsys.readouterr().out.split(f"AgentBench data root: {dest}")[-1]
    assert "commit 578c5e9f706fc2dd96188ca6c8cf9095ca0c6528, from " + str(upstream_archive) in out
    assert "absent from the source: data/dbbench/db_out_new.jsonl" in out
    assert "db        train  not usable (missing data/dbbench/db_out_new.jsonl)" in out
    assert "os        test   usable" in out


def test_status_of_an_empty_cache_says_how_to_fetch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "status", "--data-root", str(tmp_path / "none")]) == 1
    assert "Run `agentrl-envs data fetch`" in capsys.readouterr().out


def test_a_refused_fetch_is_an_error_line(
    upstream_archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corrupt = tmp_path / "corrupt.tar.gz"
    rewrite_archive(
        upstream_archive, corrupt, lambda path, data: data + b"x" if path == "configs/tasks/kg.yaml" else data
    )
    assert main(["data", "fetch", "--from", str(corrupt), "--dest", str(tmp_path / "root"), "--no-progress"]) == 2
    assert "agentrl-envs: error: configs/tasks/kg.yaml from" in capsys.readouterr().err
