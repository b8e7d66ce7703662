"""The engine process: same play as the inline engine, replaced every ``recycle_after`` episodes, and a dead
child is an infrastructure error of that episode only."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest

from agentrl_envs.core import EnvError, InfraError
from agentrl_envs.tasks.alfworld.env import AlfworldEnv
from agentrl_envs.tasks.alfworld.workers import EngineProcess

from .conftest import GENERATION_TIMEOUT, act

pytestmark = pytest.mark.timeout(GENERATION_TIMEOUT)

Make = Callable[..., AlfworldEnv]


def test_the_process_engine_plays_as_the_inline_one(make_env: Make) -> None:
    transcripts = []
    for engine in ("process", "inline"):
        env = make_env(engine=engine)
        messages, _ = env.reset(options={"index": 7})
        for command in ["look", "inventory", *env.store.game(env.paths[7])["walkthrough"]]:
            step = env.step(act(command))
            messages += step[0]
        transcripts.append((messages, step[1:4]))
    assert transcripts[0] == transcripts[1]
    assert transcripts[0][1] == (1.0, True, False)


def test_the_child_is_replaced_every_recycle_after_episodes(make_env: Make) -> None:
    env = make_env(recycle_after=2)
    pids = []
    for index in range(5):
        env.reset(options={"index": index})
        env.step(act("look"))
        assert isinstance(env._engine, EngineProcess)
        pids.append(env._engine.pid)
    assert env._engine.children_started == 3
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]
    env.close()
    assert env._engine is None


def test_a_dead_child_is_a_task_error_and_the_next_reset_recovers(make_env: Make) -> None:
    env = make_env()
    env.reset(options={"index": 0})
    assert isinstance(env._engine, EngineProcess) and env._engine.pid is not None
    os.kill(env._engine.pid, signal.SIGKILL)
    _, reward, terminated, truncated, info = env.step(act("look"))
    assert (info["status"], info["infra_error"], reward) == ("task error", True, 0.0)
    assert "engine process failed" in info["error"]
    env.reset(options={"index": 0})
    assert env.step(act("look"))[4]["status"] == "running"


def test_step_before_any_reset_is_an_infra_error() -> None:
    with pytest.raises(InfraError, match="reset first"):
        EngineProcess().step("look")


@pytest.mark.parametrize("options", [{"engine": "docker"}, {"recycle_after": 0}])
def test_bad_engine_options_are_refused(make_env: Make, options: dict) -> None:
    with pytest.raises(EnvError):
        make_env(**options)


def test_a_missing_game_is_generated_in_the_child(make_env: Make, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_env()
    expected = env.store.game(env.paths[4])
    monkeypatch.setattr(env.store, "cached", lambda path: None)
    monkeypatch.setattr(env.store, "game", lambda path: pytest.fail("generated in the env's own process"))
    messages, info = env.reset(options={"index": 4})
    task = expected["grammar"].split("Your task is to: ")[1].split('"')[0]
    assert info["game"] == env.paths[4] and f"Your task is to: {task}" in messages[1]["content"]
