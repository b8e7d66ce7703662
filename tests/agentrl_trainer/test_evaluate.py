"""Checkpoint evaluation in process: BFCL's verdict through token-level episodes, and the CLI on a tiny model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agentrl_envs.core.oracle import load_oracle
from agentrl_trainer.evaluate import aevaluate, main
from agentrl_trainer.rollout.episode import EpisodeLimits
from agentrl_trainer.types import Generation


class _Scripted:
    """An engine that 'knows' BFCL base entry 0: it writes the oracle's moves as Qwen-style text."""

    name = "scripted"
    version = 0

    def __init__(self, tokenizer: Any) -> None:
        oracle = load_oracle("bfcl_base")
        oracle.begin(0)
        self.texts = []
        for move in oracle._plan:
            calls = [
                "<tool_call>\n"
                + json.dumps({"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])})
                + "\n</tool_call>"
                for c in move.get("tool_calls") or []
            ]
            self.texts.append("\n".join(calls) if calls else move["content"])
        self.tokenizer = tokenizer

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        ids = self.tokenizer.encode(self.texts.pop(0), add_special_tokens=False) + [self.tokenizer.eos_token_id]
        return Generation(tuple(ids), (0.0,) * len(ids), 0, self.name, "stop")


def test_a_model_that_plays_the_ground_truth_scores_full_bfcl_accuracy(tokenizer: Any) -> None:
    limits = EpisodeLimits(max_turns=50, max_new_tokens=4096, max_total_tokens=10**6)
    results = asyncio.run(aevaluate(_Scripted(tokenizer), tokenizer, ["bfcl_base"], limit=1, limits=limits))
    assert results["tasks"]["bfcl_base"]["status_counts"] == {"completed": 1}
    assert results["bfcl"]["multi_turn_base"] == {"accuracy": 1.0, "correct_count": 1, "total_count": 1}


def test_the_cli_evaluates_a_checkpoint_on_bfcl(tiny_model_path: Path, tmp_path: Path) -> None:
    """A tiny random model whose context is too short for BFCL's prompts: every entry counts as wrong."""
    argv = [str(tiny_model_path), "--tasks", "bfcl", "--limit", "1", "--max-total-tokens", "64"]
    assert main([*argv, "--output", str(tmp_path / "r.json")]) == 0
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["bfcl"]["multi_turn_overall"] == {"accuracy": 0.0, "total_count": 4, "complete": True}
    assert {f["status_counts"]["agent context limit"] for f in results["tasks"].values()} == {1}
