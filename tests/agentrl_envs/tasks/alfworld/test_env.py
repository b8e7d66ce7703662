"""``AgentBench/ALFWorld-v0`` follows AgentBench-FC's loop: its prompts, its reading of tool calls, its step
limit and repeat rule, and success = the game is won."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from gymnasium.utils.env_checker import check_env

from agentrl_envs.core import EnvError
from agentrl_envs.core.data import DataRoot
from agentrl_envs.tasks.alfworld.env import AlfworldEnv
from agentrl_envs.tasks.alfworld.games import GameStore

from .conftest import GENERATION_TIMEOUT, act, call

pytestmark = pytest.mark.timeout(GENERATION_TIMEOUT)

Make = Callable[..., AlfworldEnv]


@pytest.fixture
def env(make_env: Make) -> AlfworldEnv:
    return make_env()


def walkthrough(env: AlfworldEnv, index: int) -> list[str]:
    return GameStore(DataRoot.find()).game(env.paths[index])["walkthrough"]


def test_check_env_passes(env: AlfworldEnv) -> None:
    check_env(env, skip_render_check=True)


def test_reset_shows_upstreams_prompt_and_the_available_actions(env: AlfworldEnv) -> None:
    prompts = DataRoot.find().prompts("alfworld")
    messages, info = env.reset(options={"index": 0})
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"] == prompts["system_prompt"]
    first = messages[1]["content"]
    assert first.startswith("Here is your task. You are in the middle of a room. Looking quickly around you")
    assert "Welcome to TextWorld" not in first
    task, actions = first.split(" AVAILABLE ACTIONS: ")
    assert "\nYour task is to: put " in task
    assert actions.endswith("\n") and actions.rstrip("\n").split("\n") == info["admissible_commands"]
    assert info["tools"][0]["function"]["name"] == "take_action"
    assert (info["task"], info["split"], info["index"], info["status"]) == ("alfworld", "test", 0, "running")
    assert env.max_rounds == 20


def test_a_step_answers_with_the_observation_and_the_available_actions(env: AlfworldEnv) -> None:
    env.reset(options={"index": 0})
    first = walkthrough(env, 0)[0]
    assert first.startswith("go to ")
    messages, reward, terminated, truncated, info = env.step(call({"action": first}, call_id="abc"))
    assert [(m["role"], m["tool_call_id"]) for m in messages] == [("tool", "abc")]
    observation, actions = messages[0]["content"].split(" AVAILABLE ACTIONS: ")
    assert not observation.startswith("You arrive at")  # upstream's process_ob cuts "You arrive at loc N. "
    assert observation == info["observation"]
    assert actions.rstrip("\n").split("\n") == info["admissible_commands"]
    assert (reward, terminated, truncated, info["won"]) == (0.0, False, False, False)
    assert info["action"] == {"raw": first, "normalized": first, "command": first, "how": "exact", "bleu": None}


def test_the_walkthrough_wins_with_reward_one(env: AlfworldEnv) -> None:
    env.reset(options={"index": 3})
    plan = walkthrough(env, 3)
    for number, command in enumerate(plan, 1):
        _, reward, terminated, truncated, info = env.step(act(command))
        assert terminated == (number == len(plan))
    assert (reward, info["score"], info["won"], info["status"]) == (1.0, 1.0, True, "completed")


def test_a_near_miss_is_snapped_and_the_snap_reported(env: AlfworldEnv) -> None:
    env.reset(options={"index": 0})
    first = walkthrough(env, 0)[0]
    _, _, _, _, info = env.step(act(first.upper().replace("GO TO", "Walk to") + "\nthen look around"))
    assert info["action"]["how"] == "bleu" and info["action"]["command"] == first
    assert info["action"]["bleu"] > 0.01 and not info["invalid_action"]


def test_the_first_value_of_the_first_call_is_the_action_whatever_its_name(env: AlfworldEnv) -> None:
    env.reset(options={"index": 0})
    first = walkthrough(env, 0)[0]
    message = call({"command": first, "why": "x"}, name="do_something")
    message["tool_calls"].append(call({"action": "look"})["tool_calls"][0])
    messages, _, _, _, info = env.step(message)
    assert info["action"]["command"] == first and len(messages) == 1
    assert "Unknown tool 'do_something'" in info["tool_call_error"]


def test_a_reply_without_tool_call_gets_upstreams_message_and_the_status_sticks(env: AlfworldEnv) -> None:
    env.reset(options={"index": 3})
    messages, reward, terminated, _, info = env.step({"role": "assistant", "content": "I will look around."})
    assert messages == [{"role": "user", "content": "No executable tool calls found. Please call a tool instead"}]
    assert (reward, terminated, info["status"]) == (0.0, False, "running")
    for command in walkthrough(env, 3):
        _, reward, terminated, _, info = env.step(act(command))
    # upstream keeps the finish reason of the bad turn and reports it with the win
    assert (reward, terminated, info["status"], info["score"]) == (1.0, True, "agent validation failed", 1.0)


@pytest.mark.parametrize("arguments", ['{"action": "look"', "[1, 2]", "{}", '{"action": 5}', "null"])
def test_unreadable_arguments_get_upstreams_message(env: AlfworldEnv, arguments: str) -> None:
    env.reset(options={"index": 0})
    messages, reward, terminated, _, info = env.step(call(arguments))
    assert messages == [{"role": "user", "content": "No valid tool calls found. Please call a tool instead."}]
    assert (reward, terminated, info["status"]) == (0.0, False, "running")
    assert info["tool_call_error"]


def test_three_identical_outputs_after_three_steps_end_the_episode(env: AlfworldEnv) -> None:
    env.reset(options={"index": 0})
    statuses = []
    for _ in range(4):
        _, reward, terminated, _, info = env.step(act("look"))
        statuses.append(info["status"])
    assert statuses == ["running", "running", "running", "agent invalid action"]
    assert (reward, terminated) == (0.0, True)


def test_identical_outputs_are_compared_raw_before_normalisation(env: AlfworldEnv) -> None:
    env.reset(options={"index": 0})
    for text in ["look", "Look", "LOOK", "look ", "look"]:
        _, _, terminated, _, info = env.step(act(text))
    assert not terminated and info["status"] == "running"


def test_twenty_turns_without_winning_reach_the_task_limit(env: AlfworldEnv) -> None:
    env.reset(options={"index": 0})
    for turn in range(1, 21):
        _, reward, terminated, truncated, info = env.step(act("look" if turn % 2 else "inventory"))
    assert (reward, terminated, truncated, info["round"]) == (0.0, False, True, 20)
    assert info["status"] == "task limit reached"
    with pytest.raises(EnvError, match="has ended"):
        env.step(act("look"))


def test_text_mode_reads_action_lines(make_env: Make) -> None:
    env = make_env(mode="text")
    env.reset(options={"index": 0})
    first = walkthrough(env, 0)[0]
    messages, _, _, _, info = env.step("Action: take_action\n" + json.dumps({"action": first}))
    assert messages[0]["role"] == "user" and "AVAILABLE ACTIONS" in messages[0]["content"]
    assert info["action"]["command"] == first


def test_resets_are_independent(env: AlfworldEnv) -> None:
    first, _ = env.reset(options={"index": 0})
    env.step(act(walkthrough(env, 0)[0]))
    again, _ = env.reset(options={"index": 0})
    assert again == first


def test_dev_split_has_twenty_games(make_env: Make) -> None:
    assert make_env(split="dev").num_samples() == 20
