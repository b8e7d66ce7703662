import asyncio
import json
import logging
import threading
from typing import Any

import pytest
from gymnasium.error import ResetNeeded
from gymnasium.utils.env_checker import check_env

from agentrl_envs.core import EnvError, InfraError, SampleStatus

from .toy_env import ToyEnv


def call(name: str, **arguments: object) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def test_check_env_passes() -> None:
    check_env(ToyEnv(), skip_render_check=True)


def test_reset_returns_first_messages_and_contract_info() -> None:
    env = ToyEnv()
    messages, info = env.reset(options={"index": 2})
    assert [m["role"] for m in messages] == ["system", "user"]
    assert info["task"] == "toy" and info["split"] == "test" and info["index"] == 2
    assert info["status"] == "running" and info["infra_error"] is False
    assert [t["function"]["name"] for t in info["tools"]] == ["echo", "answer"]
    assert info["fidelity"] == "upstream"


def test_seed_picks_the_same_sample() -> None:
    env = ToyEnv()
    assert env.reset(seed=7)[1]["index"] == env.reset(seed=7)[1]["index"]


def test_winning_answer_completes_with_reward() -> None:
    env = ToyEnv()
    env.reset(options={"index": 3})
    obs, reward, terminated, truncated, info = env.step(call("answer", value=3))
    assert (reward, terminated, truncated, info["status"]) == (1.0, True, False, "completed")
    assert env.finished == 1


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (call("nope", text="x"), "Unknown tool 'nope'"),
        (call("answer", value="three"), "Invalid arguments for 'answer': 'three' is not of type 'integer'"),
        (call("answer"), "'value' is a required property"),
        (call("answer", value=1, extra=2), "Additional properties are not allowed"),
    ],
)
def test_bad_tool_calls_become_tool_messages(action: dict, expected: str) -> None:
    env = ToyEnv()
    env.reset(options={"index": 0})
    obs, reward, terminated, truncated, info = env.step(action)
    assert obs[0]["role"] == "tool" and expected in obs[0]["content"]
    assert not terminated and info["status"] == "running"


def test_malformed_json_arguments_are_reported() -> None:
    env = ToyEnv()
    env.reset(options={"index": 0})
    action = call("echo")
    action["tool_calls"][0]["function"]["arguments"] = '{"text": '
    obs, *_ = env.step(action)
    assert "not valid JSON" in obs[0]["content"]


def test_action_forms_are_equivalent() -> None:
    env = ToyEnv()
    for action in (call("echo", text="hi"), json.dumps(call("echo", text="hi"))):
        env.reset(options={"index": 0})
        obs, *_ = env.step(action)
        assert obs == [{"role": "tool", "tool_call_id": "c1", "content": "hi"}]


def test_plain_text_and_garbage_never_raise() -> None:
    env = ToyEnv(max_rounds=10)
    env.reset(options={"index": 0})
    for action in ("hello", "{not json", "\x00" * 10, "x" * 100_000, "ü∂ƒ"):
        obs, *_ = env.step(action)
        assert obs == [{"role": "user", "content": "Use a tool."}]


def test_round_limit_truncates_with_task_limit_reached() -> None:
    env = ToyEnv()
    env.reset(options={"index": 0})
    results = [env.step("hi") for _ in range(3)]
    _, reward, terminated, truncated, info = results[-1]
    assert (terminated, truncated, info["status"], info["round"]) == (False, True, "task limit reached", 3)
    with pytest.raises(EnvError, match="call reset"):
        env.step("again")


def test_step_before_reset_raises() -> None:
    with pytest.raises(ResetNeeded):
        ToyEnv().step("hi")


def test_infra_fault_in_step_is_task_error_not_agent_failure() -> None:
    env = ToyEnv(fail_on="step")
    env.reset(options={"index": 0})
    obs, reward, terminated, truncated, info = env.step(call("echo", text="x"))
    assert info["status"] == SampleStatus.TASK_ERROR == "task error"
    assert info["infra_error"] is True and truncated and not terminated and reward == 0.0
    assert "ConnectionError: backend down" in info["error"]
    assert env.finished == 1


def test_infra_fault_in_reset_raises_infra_error() -> None:
    env = ToyEnv(fail_on="start")
    with pytest.raises(InfraError, match="could not start sample 1: backend down"):
        env.reset(options={"index": 1})


@pytest.mark.parametrize("index", [-1, 5, "0", True])
def test_bad_index_is_rejected(index: object) -> None:
    with pytest.raises(EnvError):
        ToyEnv().reset(options={"index": index})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"split": "val"}, "Unknown split 'val'"),
        ({"mode": "xml"}, "Unknown mode 'xml'"),
        ({"max_rounds": 0}, "max_rounds must be at least 1"),
    ],
)
def test_bad_options_are_rejected(kwargs: dict, message: str) -> None:
    with pytest.raises(EnvError, match=message):
        ToyEnv(**kwargs)


def test_text_mode_parses_action_lines_and_shows_results_as_user_messages() -> None:
    env = ToyEnv(mode="text")
    env.reset(options={"index": 4})
    obs, *_ = env.step('I will echo.\nAction: echo\n{"text": "hey"}')
    assert obs == [{"role": "user", "content": "hey"}]
    *_, info = env.step('Action: answer\n```json\n{"value": 4}\n```')
    assert info["status"] == "completed"


def test_async_twins_match_sync() -> None:
    async def play() -> tuple:
        env = ToyEnv()
        await env.areset(options={"index": 1})
        result = await env.astep(call("answer", value=1))
        await env.aclose()
        return result

    _, reward, terminated, _, _ = asyncio.run(play())
    assert reward == 1.0 and terminated


def test_reset_mid_episode_releases_resources() -> None:
    env = ToyEnv()
    env.reset(options={"index": 0})
    env.reset(options={"index": 1})
    assert env.finished == 1


def test_render_ansi_shows_transcript() -> None:
    env = ToyEnv(render_mode="ansi")
    env.reset(options={"index": 0})
    env.step(call("echo", text="hi"))
    text = env.render()
    assert "[system] Find the number." in text and "-> echo" in text


TOO_DEEP = "nest arrays/objects more than 64 levels deep (at most 64 are allowed)"
TOO_LONG = "hold a number of 100000 characters (at most 1000 are allowed)"
HOSTILE_ARGUMENTS = {
    "100 KB of nested brackets": ("[" * 50_000 + "]" * 50_000, TOO_DEEP),
    "nested brackets in an object": ('{"text": ' + "[" * 50_000 + "]" * 50_000 + "}", TOO_DEEP),
    "a 100,000-digit number": ('{"value": ' + "7" * 100_000 + "}", TOO_LONG),
    "a 100,000-digit fraction": ('{"value": 0.' + "7" * 99_998 + "}", TOO_LONG),
}
"""Tool-call arguments that used to escape the parser and end the episode as ``task error`` (issue 16)."""


@pytest.mark.parametrize(("arguments", "expected"), HOSTILE_ARGUMENTS.values(), ids=HOSTILE_ARGUMENTS.keys())
def test_hostile_arguments_are_the_agents_error_not_an_infra_error(arguments: str, expected: str) -> None:
    env = ToyEnv()
    env.reset(options={"index": 0})
    action = call("answer")
    action["tool_calls"][0]["function"]["arguments"] = arguments
    obs, reward, terminated, truncated, info = env.step(action)
    assert (info["status"], info["infra_error"], terminated, truncated) == ("running", False, False, False)
    assert obs[0]["content"] == f"Arguments of 'answer' {expected}."


@pytest.mark.parametrize(("arguments", "expected"), HOSTILE_ARGUMENTS.values(), ids=HOSTILE_ARGUMENTS.keys())
def test_hostile_arguments_in_text_mode(arguments: str, expected: str) -> None:
    env = ToyEnv(mode="text")
    env.reset(options={"index": 0})
    obs, reward, terminated, truncated, info = env.step(f"Action: answer\n{arguments}")
    assert (info["status"], info["infra_error"], terminated, truncated) == ("running", False, False, False)
    assert obs[0]["content"] in (
        f"Arguments of 'answer' {expected}.",
        "Invalid arguments for 'answer': 'value' is a required property.",
    )


@pytest.mark.parametrize(
    "action",
    [
        json.dumps({"role": "assistant", "content": "x"})[:-1] + ', "pad": ' + "[" * 50_000 + "]" * 50_000 + "}",
        '{"role": "assistant", "content": ' + "9" * 100_000 + "}",
        {"role": "assistant", "content": 10**5000},
        {"role": "assistant", "content": [{"type": "text", "text": 10**5000}]},
        {"role": "assistant", "tool_calls": [{"function": {"name": "echo", "arguments": {"text": 10**5000}}}]},
        {"role": "assistant", "tool_calls": [{"function": {"name": 10**5000, "arguments": {1, 2}}}]},
        {"role": "assistant", 7: "a non-string key", "content": "x"},
    ],
    ids=[
        "deep JSON message",
        "long number in JSON message",
        "huge int content",
        "huge int part",
        "huge int arg",
        "odd name and set",
        "non-string key",
    ],
)
def test_hostile_messages_never_raise(action: object) -> None:
    env = ToyEnv()
    env.reset(options={"index": 0})
    obs, _, _, _, info = env.step(action)
    assert obs and info["status"] == "running" and info["infra_error"] is False


def test_a_step_ended_by_a_close_from_another_thread_is_not_logged_as_a_fault(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # An owner stopping (the trainer's rollouts, a pool closing) closes envs whose steps still run in worker
    # threads; the step then fails on state the close released. That is the close's doing, not a fault to report.
    entered, go_on = threading.Event(), threading.Event()

    class Slow(ToyEnv):
        def _respond(self, message: Any) -> Any:
            entered.set()
            go_on.wait(10)
            if self.finished:
                raise AttributeError("'NoneType' object has no attribute 'query'")  # what a released backend raises
            return super()._respond(message)

    env = Slow()
    env.reset(options={"index": 0})
    results: list[Any] = []
    stepping = threading.Thread(target=lambda: results.append(env.step(call("echo", text="x"))))
    with caplog.at_level(logging.DEBUG):
        stepping.start()
        assert entered.wait(10)
        env.close()
        go_on.set()
        stepping.join(10)
    *_, truncated, info = results[0]
    assert info["infra_error"] is True and truncated
    assert info["error"].startswith("the environment was closed while this step ran (AttributeError")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
