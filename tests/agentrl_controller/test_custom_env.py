"""The example environment of docs/envs/custom.md served by a real controller and evaluated through it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agentrl_controller.config import TaskConfig
from agentrl_envs.core.registry import TASKS
from agentrl_envs.eval.cli import main as eval_main
from tests.agentrl_controller.conftest import start_server, stop_server
from tests.custom_env_doc import guess_env_module

pytestmark = pytest.mark.slow


def test_the_docs_example_through_the_controller(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with guess_env_module(tmp_path / "src") as source:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")])}
        task = TaskConfig(name="guess-std", env="guess_env:GuessEnv", split="test", aliases=["guess"], lazy=False)
        server = start_server(tmp_path, [task], env=env)
        try:
            # This process has never heard of "guess": under --controller the name goes to the controller as is.
            assert "guess" not in TASKS
            remote = ["--tasks", "guess", "--controller", server.url, "--agent", "random", "--runs", "2"]
            assert eval_main([*remote, "--output", str(tmp_path / "random")]) == 0
            results = json.loads((tmp_path / "random" / "results.json").read_text())
            assert results["tasks"]["guess"]["episodes"] == 10 and results["tasks"]["guess"]["infra_errors"] == 0
            # Known here too (module:Class), the oracle plays it remotely to full marks.
            oracle = ["--tasks", "guess_env:GuessEnv", "--controller", server.url, "--agent", "oracle"]
            assert eval_main([*oracle, "--output", str(tmp_path / "oracle")]) == 0
            results = json.loads((tmp_path / "oracle" / "results.json").read_text())
            assert results["tasks"]["guess"]["success_rate"] == 1.0 and results["tasks"]["guess"]["n"] == 5
            # A name the controller does not serve fails with its list of names.
            unknown = ["--tasks", "nope", "--controller", server.url, "--agent", "random"]
            assert eval_main([*unknown, "--output", str(tmp_path / "x")]) == 2
            assert "Unknown task 'nope'. This controller serves: guess, guess-std" in capsys.readouterr().err
        finally:
            stop_server(server)
