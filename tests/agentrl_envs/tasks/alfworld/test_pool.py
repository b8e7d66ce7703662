"""The engine pool: many envs at once share at most ``engine_pool_size`` engine processes, play as unpooled
envs do, recycle idle children, and a lost child fails only the games it hosted."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest

from agentrl_envs.core import EnvError
from agentrl_envs.tasks.alfworld.env import AlfworldEnv
from agentrl_envs.tasks.alfworld.pool import EnginePool, PooledEngine, shared_pool

from .conftest import GENERATION_TIMEOUT, act

pytestmark = pytest.mark.timeout(GENERATION_TIMEOUT)

Make = Callable[..., AlfworldEnv]
ENVS = 12
POOL_SIZE = 3


def _episode(env: AlfworldEnv, index: int, pids: set[int] | None = None) -> list[Any]:
    """Reset on game ``index`` and play its walkthrough; the whole transcript and end."""
    messages, _ = env.reset(options={"index": index})
    if pids is not None and isinstance(env._engine, PooledEngine) and env._engine.pid is not None:
        pids.add(env._engine.pid)
    end: tuple[Any, ...] = ()
    for command in env.store.game(env.paths[index])["walkthrough"]:
        step = env.step(act(command))
        messages += step[0]
        end = step[1:4]
        if step[2] or step[3]:
            break
    return [messages, end]


def test_concurrent_envs_share_a_bounded_pool_and_play_as_unpooled_ones(make_env: Make) -> None:
    pool = shared_pool(POOL_SIZE, recycle_after=20)
    pool.close()  # start from no children whatever ran before
    started_before = pool.children_started  # the process's shared pool counts what earlier tests started too
    envs = [make_env(engine_pool_size=POOL_SIZE) for _ in range(ENVS)]
    results: list[Any] = [None] * ENVS
    pids: set[int] = set()
    errors: list[BaseException] = []
    barrier = threading.Barrier(ENVS)

    def play(slot: int) -> None:
        try:
            barrier.wait()
            results[slot] = _episode(envs[slot], slot)
            pids.update(pool.pids)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=play, args=(slot,)) for slot in range(ENVS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert 1 <= len(pids) <= POOL_SIZE and pool.children_started - started_before <= POOL_SIZE
    assert not any(child.live for child in pool._children), "a finished episode still holds its game"
    reference = make_env(engine="inline")
    for slot in range(ENVS):
        assert results[slot] == _episode(reference, slot), f"game {slot} played differently in the pool"
        assert results[slot][1] == (1.0, True, False)
    pool.close()


def test_an_idle_child_is_recycled_after_its_share_of_games(make_env: Make) -> None:
    pool = shared_pool(1, recycle_after=2)
    pool.close()
    env = make_env(engine_pool_size=1, recycle_after=2)
    pids = []
    for index in range(5):
        env.reset(options={"index": index})
        env.step(act("look"))
        assert isinstance(env._engine, PooledEngine)
        pids.append(env._engine.pid)
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]
    assert pool.children_started == 3 and pool.pids == [pids[4]]
    pool.close()


def test_a_lost_child_fails_its_games_and_the_next_reset_recovers(make_env: Make) -> None:
    pool = EnginePool(size=1)
    first, second = (AlfworldEnv(engine_pool_size=1) for _ in range(2))
    try:
        for env in (first, second):
            env._engine = pool.engine()
            env.reset(options={"index": 0})
        assert isinstance(first._engine, PooledEngine) and first._engine.pid is not None
        assert first._engine.pid == pool.pids[0]
        os.kill(first._engine.pid, signal.SIGKILL)
        for env in (first, second):
            info = env.step(act("look"))[4]
            assert (info["status"], info["infra_error"]) == ("task error", True)
        first.reset(options={"index": 0})
        assert first.step(act("look"))[4]["status"] == "running"
        assert pool.children_started == 2 and len(pool.pids) == 1
    finally:
        first.close()
        second.close()
        pool.close()


@pytest.mark.parametrize("options", [{"engine_pool_size": 0}, {"engine": "inline", "engine_pool_size": 2}])
def test_bad_pool_options_are_refused(make_env: Make, options: dict) -> None:
    with pytest.raises(EnvError, match="engine_pool_size"):
        make_env(**options)


def test_step_before_any_reset_is_an_infra_error() -> None:
    from agentrl_envs.core import InfraError

    with pytest.raises(InfraError, match="reset first"):
        EnginePool(size=1).engine().step("look")
