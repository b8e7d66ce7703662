from __future__ import annotations

import json
import random
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import agentrl_envs
from agentrl_envs.core import load_oracle
from agentrl_envs.tasks.webshop import WebShopEnv
from agentrl_envs.tasks.webshop.oracle import available_actions_of

from .conftest import call, click, search


def play(env: WebShopEnv, index: int, policy: Any) -> tuple[float, dict[str, Any]]:
    obs, info = env.reset(options={"index": index})
    reward, terminated, truncated = 0.0, False, False
    while not (terminated or truncated):
        obs, reward, terminated, truncated, info = env.step(policy(obs))
    return reward, info


def test_registered_and_made_through_gym(env: WebShopEnv) -> None:
    made = agentrl_envs.make("webshop-std")
    assert isinstance(made.unwrapped, WebShopEnv) and made.unwrapped.num_samples() == 200
    assert gym.make("AgentBench/WebShop-v0", split="train").unwrapped.num_samples() == 11000
    messages, info = env.reset(options={"index": 0})
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[1]["content"].startswith("The initial observation:\nWebShop [SEP] Instruction: [SEP] ")
    assert messages[1]["content"].endswith("Available Actions:\n{'has_search_bar': True, 'clickables': ['search']}")
    assert info["fidelity"] == "emulated" and info["backend"] == "generated"
    assert [t["function"]["name"] for t in info["tools"]] == ["search_action", "click_action"]


def test_check_env(env: WebShopEnv) -> None:
    check_env(WebShopEnv(split="test"), skip_render_check=True)


def test_oracle_reaches_full_reward_on_the_test_goals(env: WebShopEnv) -> None:
    oracle = load_oracle("webshop")
    rewards = []
    for index in range(env.num_samples()):
        oracle.begin(index)
        reward, info = play(env, index, oracle.act)
        rewards.append(reward)
        assert info["status"] == "completed"
    assert sum(rewards) / len(rewards) >= 0.99


def test_random_clicker_stays_low(env: WebShopEnv) -> None:
    rng = random.Random(0)

    def random_clicker(obs: list[dict[str, Any]]) -> dict[str, Any]:
        actions = available_actions_of(obs)
        if actions.get("has_search_bar"):
            words = env.session.goal.instruction_text.split()
            return search(" ".join(rng.sample(words, 3)))
        return click(rng.choice(actions["clickables"]))

    rewards = [play(env, index, random_clicker)[0] for index in range(env.num_samples())]
    assert sum(rewards) / len(rewards) < 0.2


def test_tool_message_format_and_first_call_only(env: WebShopEnv) -> None:
    env.reset(options={"index": 1})
    two = search("shoes")
    two["tool_calls"].append({"id": "c2", "type": "function", "function": {"name": "click_action", "arguments": "{}"}})
    obs, reward, terminated, truncated, info = env.step(two)
    assert [(m["role"], m["tool_call_id"]) for m in obs] == [("tool", "c1"), ("tool", "c2")]
    assert obs[0]["content"].startswith("Action: search[shoes]\n\nObservation:\nInstruction: [SEP] ")
    assert (
        "\n\nAvailable Actions:\n{'has_search_bar': False, 'clickables': ['back to search', 'next >',"
        in obs[0]["content"]
    )
    assert "Only the first tool call" in obs[1]["content"]
    assert (reward, terminated, truncated, info["status"]) == (0.0, False, False, "running")


def test_no_tool_call_gets_upstream_wording(env: WebShopEnv) -> None:
    env.reset(options={"index": 1})
    obs, *_ = env.step({"role": "assistant", "content": "I will search."})
    assert obs == [
        {
            "role": "user",
            "content": "Observation:\nNo executable tool calls found! You should call a tool instead.\n\n"
            "Available Actions:\n{'has_search_bar': True, 'clickables': ['search']}",
        }
    ]


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (call("buy_action", value="x"), "No valid tool call found from agent. Unknown tool 'buy_action'"),
        (call("search_action", query="shoes"), "No valid tool call found from agent. Invalid arguments"),
        (call("click_action", value=3), "3 is not of type 'string'"),
    ],
)
def test_bad_tool_calls_are_answered_not_raised(env: WebShopEnv, action: dict[str, Any], expected: str) -> None:
    env.reset(options={"index": 2})
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs[0]["role"] == "tool" and expected in obs[0]["content"]
    assert (reward, terminated, info["status"], info["infra_error"]) == (0.0, False, "running", False)


def test_malformed_json_arguments(env: WebShopEnv) -> None:
    env.reset(options={"index": 2})
    action = {"role": "assistant", "tool_calls": [{"id": "c9", "function": {"name": "click_action", "arguments": "{"}}]}
    obs, *_ = env.step(action)
    assert obs[0]["tool_call_id"] == "c9" and "not valid JSON" in obs[0]["content"]


def test_empty_and_huge_and_non_ascii_searches(env: WebShopEnv) -> None:
    env.reset(options={"index": 3})
    obs, _, _, _, info = env.step(search(""))
    assert (
        info["invalid_action"].startswith("search needs keywords") and "WebShop [SEP] Instruction:" in obs[0]["content"]
    )
    obs, _, _, _, info = env.step(search("socks " * 20_000))
    assert len(obs[0]["content"]) < 10_000 and "characters, cut)" in obs[0]["content"]
    assert "Page 1 (Total results: " in obs[0]["content"]
    obs, _, _, _, info = env.step(search("chaussures très légères 靴 👟"))
    assert "Action: search[chaussures très légères 靴 👟]" in obs[0]["content"]
    assert "Page 1 (Total results: 0)" in obs[0]["content"] and info["status"] == "running"


def test_click_not_on_page_repeats_the_page(env: WebShopEnv) -> None:
    env.reset(options={"index": 4})
    first, *_ = env.step(search("coffee table"))
    obs, reward, terminated, _, info = env.step(click("B00NOTHERE"))
    page = first[0]["content"].split("\n\nObservation:\n", 1)[1]
    assert obs[0]["content"] == f"Action: click[B00NOTHERE]\n\nObservation:\n{page}"
    assert "'b00nothere' is not clickable on this page" in info["invalid_action"] and not terminated
    explaining = WebShopEnv(explain_invalid_actions=True)
    explaining.reset(options={"index": 4})
    obs, *_ = explaining.step(click("nowhere"))
    assert (
        "Observation:\nInvalid action: 'nowhere' is not clickable on this page; clickables: 'search'."
        in obs[0]["content"]
    )


def test_actions_after_buy_now_get_a_message(env: WebShopEnv) -> None:
    oracle = load_oracle("webshop")
    oracle.begin(5)
    reward, info = play(env, 5, oracle.act)
    assert info["status"] == "completed" and info["success"] is True and reward == 1.0
    obs, reward, terminated, truncated, info = env.step(click("buy now"))
    assert "This session has ended" in obs[0]["content"] and (reward, terminated, truncated) == (0.0, True, False)


def test_round_limit_ends_with_upstream_message(env: WebShopEnv) -> None:
    env.reset(options={"index": 6})
    for _ in range(19):
        *_, info = env.step(click("nothing"))
    obs, reward, terminated, truncated, info = env.step(click("nothing"))
    assert obs == [{"role": "tool", "tool_call_id": "c1", "content": "Task limit reached."}]
    assert (reward, terminated, truncated, info["status"]) == (0.0, False, True, "task limit reached")


def test_text_mode_plays_with_action_lines() -> None:
    env = WebShopEnv(mode="text")
    oracle = load_oracle("webshop")
    oracle.begin(7)
    obs, _ = env.reset(options={"index": 7})
    terminated = truncated = False
    while not (terminated or truncated):
        function = oracle.act(obs)["tool_calls"][0]["function"]
        text = f"Thinking.\nAction: {function['name']}\n{json.dumps(json.loads(function['arguments']))}"
        obs, reward, terminated, truncated, info = env.step(text)
        assert all(m["role"] == "user" for m in obs)
    assert reward == 1.0
