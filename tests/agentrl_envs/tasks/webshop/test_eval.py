"""The oracle through ``agentrl-eval``: the whole test split, the way a user would run it."""

from __future__ import annotations

import json
from pathlib import Path

from agentrl_envs.eval.cli import main


def test_oracle_scores_at_least_099_through_agentrl_eval(tmp_path: Path) -> None:
    argv = ["--tasks", "webshop", "--agent", "oracle", "--backend", "generated", "--concurrency", "4"]
    assert main([*argv, "--output", str(tmp_path)]) == 0
    figures = json.loads((tmp_path / "results.json").read_text())["tasks"]["webshop"]
    assert figures["n"] == 200 and figures["infra_errors"] == 0
    assert figures["mean_reward"] >= 0.99
    episodes = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert sorted(e["index"] for e in episodes) == list(range(200))
    assert all(e["split"] == "test" and e["status"] == "completed" for e in episodes)
