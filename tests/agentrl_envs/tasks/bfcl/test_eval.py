"""BFCL through ``agentrl-eval``: the ``bfcl`` group, BFCL's terms in results.json, tools that change mid-episode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentrl_envs.eval.cli import main

from ...eval.openai_server import Canned, FakeOpenAIServer, completion


@pytest.fixture
def openai_server() -> FakeOpenAIServer:
    server = FakeOpenAIServer(models=["m"]).start()  # agentrl-eval's endpoint check lists models, no completion
    yield server
    server.stop()


def test_bfcl_group_reports_bfcl_s_accuracy_without_an_agentbench_data_root(
    bfcl_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setenv("AGENTRL_DATA_ROOT", str(tmp_path / "no-agentbench-here"))
    assert main(["--tasks", "bfcl", "--agent", "oracle", "--indices", "0-1", "--output", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results["tasks"]) == {"bfcl_base", "bfcl_miss_func", "bfcl_miss_param", "bfcl_long_context"}
    assert results["bfcl"]["multi_turn_overall"] == {"accuracy": 1.0, "total_count": 8, "complete": True}
    assert results["bfcl"]["multi_turn_miss_param"] == {"accuracy": 1.0, "correct_count": 2, "total_count": 2}
    episode = json.loads((tmp_path / "episodes.jsonl").read_text().splitlines()[0])
    assert episode["info"]["bfcl"]["valid"] is True
    assert "multi_turn_overall" in capsys.readouterr().out


def test_a_model_gets_held_back_functions_at_their_turn(
    bfcl_root: Path, tmp_path: Path, openai_server: FakeOpenAIServer
) -> None:
    """miss_func 0 holds ``sort`` back until turn 3 of 5: the model's 4th request is the first to offer it."""
    text = Canned(body=json.dumps(completion({"role": "assistant", "content": "I cannot."}, "m")))
    openai_server.script(*[text] * 5)
    argv = ["--tasks", "bfcl_miss_func", "--agent", "openai", "--base-url", openai_server.base_url, "--model", "m"]
    assert main([*argv, "--indices", "0", "--output", str(tmp_path)]) == 0
    offered = [{t["function"]["name"] for t in request["tools"]} for request in openai_server.requests]
    assert len(offered) == 5 and ["sort" in names for names in offered] == [False, False, False, True, True]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["bfcl"]["multi_turn_miss_func"]["accuracy"] == 0.0
