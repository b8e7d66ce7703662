"""A first user's path: without the extra, ``make`` says what to install; the docs' snippet runs as a script."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from agentrl_envs.core.errors import BackendUnavailableError
from agentrl_envs.eval.cli import main

from .conftest import GENERATION_TIMEOUT

REPO = Path(__file__).resolve().parents[4]
INSTALL = "pip install 'agentrl-envs[alfworld]'"


@pytest.fixture
def without_alfworld(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the ``alfworld`` package were not installed (a ``None`` entry makes its import and spec lookup fail)."""
    monkeypatch.setitem(sys.modules, "alfworld", None)


@pytest.mark.usefixtures("without_alfworld")
def test_make_without_the_extra_names_the_install_command() -> None:
    with pytest.raises(BackendUnavailableError, match=re.escape(INSTALL)) as raised:
        gym.make("AgentBench/ALFWorld-v0", split="test")
    assert "not installed: alfworld" in str(raised.value)


@pytest.mark.usefixtures("without_alfworld")
def test_eval_cli_without_the_extra_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data_root: Path
) -> None:
    assert main(["--tasks", "alfworld", "--limit", "1", "--output", str(tmp_path)]) != 0
    out = capsys.readouterr()
    assert INSTALL in " ".join((out.out + out.err).split())


@pytest.mark.timeout(GENERATION_TIMEOUT)
def test_the_docs_snippet_runs_as_a_script(test_games: list[str], tmp_path: Path) -> None:
    """The snippet of docs/envs/alfworld.md, saved as a file and run: its engine process re-imports the script."""
    page = (REPO / "docs" / "envs" / "alfworld.md").read_text(encoding="utf-8")
    snippet = re.search(r"```python\n(.*?)```", page, re.DOTALL)
    assert snippet is not None
    script = tmp_path / "snippet.py"
    script.write_text(snippet.group(1), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=os.environ, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "AVAILABLE ACTIONS" in done.stdout
