"""The walkthrough oracle wins (nearly) every game, on the test split and on a 200-game train sample; an agent
picking uniformly among the admissible commands almost never does."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.tasks.alfworld.env import AlfworldEnv
from agentrl_envs.tasks.alfworld.games import prepare_games, split_entries

from .conftest import GENERATION_TIMEOUT, WORKERS, act

pytestmark = pytest.mark.timeout(GENERATION_TIMEOUT)

TRAIN_SAMPLE = range(0, 3000, 15)
"""200 train games spread over the list (the list is grouped by task type, so every type is in)."""
ENGINE = {"engine": "process"}
"""The long loops run the default engine process: after hundreds of games played in-process, TextWorld's
native code crashes the interpreter at exit (SIGSEGV after the tests passed), which fails the run."""

Agent = Callable[[list[Message], dict], Message]


def play(env: AlfworldEnv, indices: range | list[int], begin: Callable[[int], Agent]) -> dict[int, str]:
    """Play each index; the ones not won, with their final status."""
    failures = {}
    for index in indices:
        observation, info = env.reset(options={"index": index})
        agent = begin(index)
        terminated = truncated = False
        while not (terminated or truncated):
            observation, reward, terminated, truncated, info = env.step(agent(observation, info))
        if not info["won"] or reward != 1.0:
            failures[index] = info["status"]
    return failures


def oracle_player(split: str) -> Callable[[int], Agent]:
    oracle = load_oracle("alfworld", split=split)

    def begin(index: int) -> Agent:
        oracle.begin(index)
        return lambda observation, info: oracle.act(observation)

    return begin


def random_player(seed: int) -> Callable[[int], Agent]:
    def begin(index: int) -> Agent:
        rng = random.Random(seed * 100_003 + index)
        return lambda observation, info: act(rng.choice(info["admissible_commands"]))

    return begin


@pytest.mark.slow
def test_oracle_wins_the_test_split(make_env: Callable[..., AlfworldEnv], test_games: list[str]) -> None:
    env = make_env(**ENGINE)
    failures = play(env, range(env.num_samples()), oracle_player("test"))
    assert len(failures) <= 0.05 * env.num_samples(), failures


@pytest.mark.slow
def test_oracle_wins_a_train_sample(make_env: Callable[..., AlfworldEnv]) -> None:
    data = DataRoot.find()
    entries = split_entries(data, "train")
    prepare_games(data, [entries[i] for i in TRAIN_SAMPLE], workers=WORKERS)
    assert len(TRAIN_SAMPLE) == 200
    failures = play(make_env(split="train", **ENGINE), TRAIN_SAMPLE, oracle_player("train"))
    assert len(failures) <= 0.05 * len(TRAIN_SAMPLE), failures


@pytest.mark.slow
def test_a_random_admissible_agent_rarely_wins(make_env: Callable[..., AlfworldEnv]) -> None:
    env = make_env(**ENGINE)
    failures = play(env, range(env.num_samples()), random_player(seed=0))
    wins = env.num_samples() - len(failures)
    assert wins < 0.10 * env.num_samples()
    assert set(failures.values()) <= {"task limit reached", "agent invalid action"}
