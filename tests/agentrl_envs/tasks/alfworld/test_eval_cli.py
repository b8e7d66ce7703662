"""The eval CLI plays ALFWorld with its registered oracle and random agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrl_envs.eval.cli import main

from .conftest import GENERATION_TIMEOUT

pytestmark = pytest.mark.timeout(GENERATION_TIMEOUT)


def test_oracle_through_the_cli(test_games: list[str], tmp_path: Path) -> None:
    argv = ["--tasks", "alfworld-std", "--agent", "oracle", "--concurrency", "2", "--indices", "0,30,60,90,108"]
    assert main([*argv, "--output", str(tmp_path)]) == 0
    figures = json.loads((tmp_path / "results.json").read_text())["tasks"]["alfworld"]
    assert figures["n"] == 5 and figures["successes"] == 5 and figures["infra_errors"] == 0


def test_the_random_agent_never_crashes_the_env(test_games: list[str], tmp_path: Path) -> None:
    argv = ["--tasks", "alfworld", "--agent", "random", "--indices", "0-2", "--option", "engine=inline"]
    assert main([*argv, "--output", str(tmp_path)]) == 0
    figures = json.loads((tmp_path / "results.json").read_text())["tasks"]["alfworld"]
    assert figures["n"] == 3 and figures["infra_errors"] == 0
