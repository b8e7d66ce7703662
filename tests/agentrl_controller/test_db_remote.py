"""The DB task (sqlite) through a real controller: ``gym.make(..., controller_url=URL)`` plays exactly like the
in-process env, and ``agentrl-eval --controller URL`` scores what an in-process run scores."""

from __future__ import annotations

import json
from collections.abc import Iterator

import gymnasium as gym
import httpx
import pytest

from agentrl_controller.config import TaskConfig
from agentrl_envs.client import RemoteEnv
from agentrl_envs.core.oracle import load_oracle
from agentrl_envs.core.registry import make
from agentrl_envs.eval.cli import main as eval_main
from tests.agentrl_controller.conftest import Server, start_server, stop_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def db_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tasks = [TaskConfig(name=f"dbbench-{s}", env="db", split=s, lazy=False, concurrency=8) for s in ("std", "dev")]
    tasks[0].aliases.append("db")
    tasks[0].split = "test"
    server = start_server(tmp_path_factory.mktemp("db-controller"), tasks)
    yield server
    stop_server(server)


def play(env: gym.Env, index: int, split: str = "test") -> list[tuple]:
    """The oracle's episode on ``index``: every observation, reward and status, in order."""
    oracle = load_oracle("db", split=split)
    observation, info = env.reset(options={"index": index})
    oracle.begin(index)
    trace = [
        (
            observation,
            info["status"] if "status" in info else "running",
            sorted(t["function"]["name"] for t in info["tools"]),
        )
    ]
    for _ in range(20):
        observation, reward, terminated, truncated, info = env.step(oracle.act(observation))
        trace.append((observation, reward, terminated, truncated, info["status"], info["score"], info["infra_error"]))
        if terminated or truncated:
            return trace
    raise AssertionError("the oracle did not finish in 20 turns")


@pytest.mark.parametrize(("split", "indices"), [("test", [0, 1, 2, 225]), ("dev", [3])])
def test_remote_env_plays_like_the_local_env(db_server, split, indices) -> None:
    remote = gym.make("AgentBench/DB-v0", controller_url=db_server.url, split=split)
    local = make("db", split=split, backend="sqlite")
    assert isinstance(remote.unwrapped, RemoteEnv)
    assert remote.unwrapped.num_samples() == local.unwrapped.num_samples()
    for index in indices:
        assert play(remote, index, split) == play(local, index, split)
    remote.close()
    local.close()


def test_agentrl_eval_with_controller_scores_like_in_process(db_server, tmp_path) -> None:
    argv = ["--tasks", "db", "--agent", "oracle", "--indices", "220-227", "--concurrency", "4"]
    assert eval_main([*argv, "--controller", db_server.url, "--output", str(tmp_path / "remote")]) == 0
    assert eval_main([*argv, "--output", str(tmp_path / "local")]) == 0
    remote, local = (json.loads((tmp_path / side / "results.json").read_text()) for side in ("remote", "local"))
    assert remote["tasks"]["db"]["n"] == 8 and remote["tasks"]["db"]["status_counts"] == {"completed": 8}
    assert remote["tasks"]["db"]["success_rate"] == local["tasks"]["db"]["success_rate"] == 7 / 8  # 225 is known bad
    episodes = [json.loads(line) for line in (tmp_path / "remote" / "episodes.jsonl").read_text().splitlines()]
    assert len({e["info"]["session_id"] for e in episodes}) == 8  # one controller session per episode
    assert httpx.get(db_server.url + "/list_sessions").json() == []  # and each was freed when it finished


def test_eval_refuses_task_options_with_a_controller(db_server, tmp_path, capsys) -> None:
    argv = ["--tasks", "db", "--controller", db_server.url, "--backend", "sqlite", "--output", str(tmp_path)]
    assert eval_main(argv) == 2
    assert "--backend and --option configure the controller's tasks" in capsys.readouterr().err
