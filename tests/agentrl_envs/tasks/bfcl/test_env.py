from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.eval.agents import RandomAgent
from agentrl_envs.tasks.bfcl.env import BFCLEnv
from agentrl_envs.tasks.bfcl.upstream import load_upstream

from .conftest import SHORT_NAMES, call, play

SAMPLE = [0, 25, 50, 75, 100, 125, 150, 175, 199]
"""Every 25th entry of a category (and the last); bench/bfcl_baselines.py plays all 200."""


def test_check_env_passes(make_env: Callable[..., BFCLEnv]) -> None:
    check_env(make_env(), skip_render_check=True)


def test_reset_gives_the_first_turn_and_the_entry_s_tools(make_env: Callable[..., BFCLEnv], bfcl_root: Path) -> None:
    env = make_env()
    messages, info = env.reset(options={"index": 0})
    entry = json.loads((bfcl_root / "bfcl_eval/data/BFCL_v4_multi_turn_base.json").read_text().splitlines()[0])
    assert messages == entry["question"][0]
    names = {t["function"]["name"] for t in info["tools"]}
    assert {"cd", "mv", "grep", "post_tweet"} <= names and "send_message" not in names  # its two classes only
    mv = next(t for t in info["tools"] if t["function"]["name"] == "mv")
    assert mv["function"]["parameters"]["type"] == "object"  # BFCL's "dict", converted as BFCL's FC handler does
    assert mv["function"]["description"].endswith("Note that the provided function is in Python 3 syntax.")
    assert (info["task"], info["split"], info["fidelity"]) == ("bfcl_base", "test", "upstream")


@pytest.mark.parametrize("task", SHORT_NAMES)
def test_oracle_passes_bfcl_s_checker(make_env: Callable[..., BFCLEnv], task: str) -> None:
    env, oracle = make_env(task), load_oracle(task)
    indices = SAMPLE + ([49] if task == "bfcl_miss_func" else [])  # 49: ground truth calls a held-back function
    for index in indices:
        oracle.begin(index)
        reward, info = play(env, index, oracle.act)
        assert (reward, info["status"], info["score"]) == (1.0, "completed", 1.0), (index, info.get("bfcl"))
        assert info["bfcl"]["valid"] and info["bfcl"]["id"] == f"{env.category.name}_{index}"


@pytest.mark.parametrize("task", SHORT_NAMES)
def test_random_agent_plays_without_raising(make_env: Callable[..., BFCLEnv], task: str) -> None:
    env, agent = make_env(task), RandomAgent(seed=0)
    for index in SAMPLE[:3]:
        asyncio.run(agent.begin(task, index))
        reward, info = play(env, index, lambda _: asyncio.run(agent.act([], env.tools)))
        assert reward == 0.0 and info["status"] in ("completed", "task limit reached")
        assert not info["infra_error"]


def test_a_wrong_final_state_fails_bfcl_s_checker(make_env: Callable[..., BFCLEnv]) -> None:
    env, oracle = make_env(), load_oracle("bfcl_base")
    oracle.begin(0)
    moves = list(oracle._plan)
    last_calls = max(i for i, m in enumerate(moves) if m.get("tool_calls"))
    diff = moves[last_calls]["tool_calls"][-1]["function"]  # base 0 ends with diff(final_report, previous_report)
    diff["arguments"] = json.dumps({"file_name1": "final_report.pdf", "file_name2": "final_report.pdf"})
    reward, info = play(env, 0, lambda _: moves.pop(0))
    assert (reward, info["score"], info["status"]) == (0.0, 0.0, "completed")
    assert info["bfcl"]["error_type"] == "multi_turn:execution_response_mismatch"


def test_the_reward_is_bfcl_s_checker_verdict(
    make_env: Callable[..., BFCLEnv], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, oracle = make_env(), load_oracle("bfcl_base")
    verdicts = []

    def reject(*args: object, **kwargs: object) -> dict[str, object]:
        verdicts.append(args)
        return {"valid": False, "error_type": "test:rejected", "error_message": "rejected by the test"}

    monkeypatch.setattr(env.upstream.checker, "multi_turn_checker", reject)
    oracle.begin(3)
    reward, info = play(env, 3, oracle.act)
    assert reward == 0.0 and info["bfcl"]["error_type"] == "test:rejected"
    model_result, ground_truth, entry, category, _ = verdicts[0]
    assert ground_truth == env.samples[3].ground_truth and category == "multi_turn_base"
    assert len(model_result) == len(ground_truth) and entry["id"] == "multi_turn_base_3"


def test_miss_func_offers_held_back_functions_at_their_turn(make_env: Callable[..., BFCLEnv]) -> None:
    env = make_env("bfcl_miss_func")
    sample = env.samples[0]  # sort is held back until turn 3
    ((turn, (name,)),) = sample.missed_function.items()
    messages, info = env.reset(options={"index": 0})
    assert name not in {t["function"]["name"] for t in info["tools"]}
    for _ in range(turn):
        messages, _, _, _, info = env.step({"role": "assistant", "content": "Nothing to call."})
    assert messages == [
        {"role": "user", "content": env.upstream.prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC}
    ]
    assert name in {t["function"]["name"] for t in info["tools"]} and info["turn"] == turn


def test_too_many_steps_in_a_turn_force_quit_as_bfcl_does(make_env: Callable[..., BFCLEnv]) -> None:
    env = make_env()
    env.reset(options={"index": 0})
    for step in range(env.step_limit + 1):
        _, reward, terminated, truncated, info = env.step(call("pwd"))
        assert (terminated, truncated) == (False, step == env.step_limit)
    assert info["status"] == "task limit reached" and reward == 0.0
    assert info["bfcl"]["error_type"] == "multi_turn:force_terminated"


def test_bad_calls_are_answered_and_never_evaluated(make_env: Callable[..., BFCLEnv], tmp_path: Path) -> None:
    env = make_env()
    env.reset(options={"index": 0})
    marker = tmp_path / "pwned"
    injection = {f"folder='x',y=__import__('pathlib').Path({str(marker)!r}).touch(),z": 1}
    messages, *_ = env.step(call("cd", **injection))
    assert "are not parameter names" in messages[0]["content"] and not marker.exists()
    messages, *_ = env.step(call("rm_rf", path="/"))
    assert messages[0]["content"].startswith("Error: Unknown tool 'rm_rf'")
    bad_json = {"role": "assistant", "tool_calls": [{"id": "b", "function": {"name": "cd", "arguments": "{"}}]}
    messages, *_ = env.step(bad_json)
    assert "not valid JSON" in messages[0]["content"]
    messages, *_ = env.step(call("cd", folder=3))  # schema-invalid: BFCL runs it and Python's error is the answer
    assert messages[0]["tool_call_id"] == "c1" and "error" in messages[0]["content"].lower()
    assert env._session is not None and env._session.turns == [[["cd(folder=3)"]]]


def test_episodes_free_bfcl_s_cached_instances(make_env: Callable[..., BFCLEnv], bfcl_root: Path) -> None:
    env, oracle = make_env(), load_oracle("bfcl_base")
    for index in (1, 1):  # the same entry twice: each episode starts from the initial state
        oracle.begin(index)
        assert play(env, index, oracle.act)[0] == 1.0
    executor = load_upstream(bfcl_root).executor
    assert not [name for name in vars(executor) if name.startswith("agentrl_")]


def test_text_mode_lists_the_functions(make_env: Callable[..., BFCLEnv]) -> None:
    env = make_env(mode="text")
    messages, _ = env.reset(options={"index": 0})
    assert messages[0]["role"] == "system" and '"name": "mv"' in messages[0]["content"]
    messages, *_ = env.step('Action: ls\n{"a": true}')
    assert messages[0]["role"] == "user" and "current_directory_content" in messages[0]["content"]


def test_concurrent_episodes_keep_their_own_state(make_env: Callable[..., BFCLEnv]) -> None:
    envs = [make_env() for _ in range(4)]
    oracles = [load_oracle("bfcl_base") for _ in envs]

    async def one(env: BFCLEnv, oracle: object, index: int) -> float:
        observation, _ = await env.areset(options={"index": index})
        oracle.begin(index)
        while True:
            observation, reward, terminated, truncated, _ = await env.astep(oracle.act(observation))
            if terminated or truncated:
                return reward

    async def main() -> list[float]:
        return await asyncio.gather(*(one(e, o, 2) for e, o in zip(envs, oracles, strict=True)))

    assert asyncio.run(main()) == [1.0] * 4
