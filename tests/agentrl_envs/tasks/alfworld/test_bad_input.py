"""Bad actions get upstream's handling: the text goes to the game unchanged when no admissible command is close
(the game answers "Nothing happens."), and nothing raises."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from agentrl_envs.tasks.alfworld.env import AlfworldEnv

from .conftest import GENERATION_TIMEOUT, act, call

pytestmark = pytest.mark.timeout(GENERATION_TIMEOUT)

BAD_ACTIONS = {
    "far from every command": "xyzzy plugh frobozz",
    "empty": "",
    "whitespace": " \n ",
    "100 KB": "qwerty " * 15_000,
    "non-ASCII": "把铅笔放到架子上 🙂",
}


@pytest.fixture
def env(make_env: Callable[..., AlfworldEnv]) -> AlfworldEnv:
    env = make_env()
    env.reset(options={"index": 0})
    return env


@pytest.mark.parametrize("text", BAD_ACTIONS.values(), ids=BAD_ACTIONS.keys())
def test_a_bad_action_reaches_the_game_unchanged_and_nothing_happens(env: AlfworldEnv, text: str) -> None:
    admissible = env.step(act("look"))[4]["admissible_commands"]
    started = time.perf_counter()
    messages, reward, terminated, truncated, info = env.step(act(text))
    assert time.perf_counter() - started < 10
    assert messages[0]["content"].startswith("Nothing happens. AVAILABLE ACTIONS: ")
    assert (reward, terminated, truncated, info["status"], info["infra_error"]) == (0.0, False, False, "running", False)
    assert info["invalid_action"] and info["admissible_commands"] == admissible
    assert info["action"]["how"] == "unmatched"
    assert info["action"]["command"].removesuffix("...") == text.strip().lower().split("\n")[0][:500]
    assert len(info["action"]["raw"]) <= 503


def test_non_ascii_around_a_command_still_snaps(env: AlfworldEnv) -> None:
    messages, _, _, _, info = env.step(act("« Look » ✓"))
    assert info["action"]["how"] == "bleu" and info["action"]["command"] == "look"
    assert not info["invalid_action"]


@pytest.mark.parametrize("arguments", ["", "{", '{"action": ["look"]}', '"look"'])
def test_malformed_arguments_never_raise(env: AlfworldEnv, arguments: str) -> None:
    messages, reward, terminated, _, info = env.step(call(arguments))
    assert messages[0]["role"] == "user" and not terminated and not info["infra_error"]


@pytest.mark.parametrize(
    "action",
    ["plain text, no JSON", '{"role": "assistant", "tool_calls": "nonsense"}', {"role": "assistant"}, {}],
)
def test_odd_messages_are_no_tool_call(env: AlfworldEnv, action: object) -> None:
    messages, _, terminated, _, info = env.step(action)
    assert messages[0]["content"].startswith("No ") and not terminated and not info["infra_error"]
