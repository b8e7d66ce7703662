"""Tasks of one's own through ``agentrl-eval``: ``module:Class``, ``register_task``, the ``agentrl_envs.tasks``
entry point, and no data root needed. The env is the example of docs/envs/custom.md."""

import json
import re
from pathlib import Path

import gymnasium as gym
import pytest

import agentrl_envs
from agentrl_envs import EnvError, register_task
from agentrl_envs.core.registry import TASKS, load_entry_points, resolve_task, unregister_task
from agentrl_envs.eval.cli import main
from tests.custom_env_doc import SECRETS_TEST, guess_env_module

from .test_cli import read_outputs


@pytest.fixture
def guess(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENTRL_DATA_ROOT", str(tmp_path / "no-data-root-here"))  # the task needs none
    with guess_env_module(tmp_path / "src") as directory:
        yield directory


@pytest.fixture(autouse=True)
def _only_agentbench_tasks_after() -> None:
    yield
    for name in [name for name in TASKS if name not in ("alfworld", "db", "kg", "os", "webshop")]:
        unregister_task(name)


def test_the_docs_example_runs_through_agentrl_eval_by_module_and_class(guess: Path, capsys) -> None:
    output = guess.parent / "out"
    assert main(["--tasks", "guess_env:GuessEnv", "--agent", "oracle", "--output", str(output)]) == 0
    results, episodes = read_outputs(output)
    figures = results["tasks"]["guess"]
    assert figures["n"] == 5 and figures["success_rate"] == 1.0 and figures["fidelity"] == "upstream"
    assert results["config"]["data"] == {"root": None, "commit": None}
    # Binary search over 1..100 finds each secret in at most 7 guesses.
    assert all(1 <= len(e["tool_calls"]) <= 7 for e in episodes)
    assert sorted(int(json.loads(e["tool_calls"][-1]["function"]["arguments"])["number"]) for e in episodes) == sorted(
        SECRETS_TEST
    )
    assert "guess" in capsys.readouterr().out


def test_registered_names_work_in_make_gym_and_eval(guess: Path) -> None:
    import guess_env  # noqa: F401 - registers "guess" on import

    env = agentrl_envs.make("guess", split="dev")
    assert env.unwrapped.num_samples() == 2
    assert gym.make("AgentRL/guess-v0").unwrapped.task == "guess"
    assert resolve_task("guess-dev")[1] == "dev"
    output = guess.parent / "out"
    assert main(["--tasks", "guess-dev", "--agent", "random", "--runs", "2", "--output", str(output)]) == 0
    results, _ = read_outputs(output)
    assert results["tasks"]["guess"]["episodes"] == 4 and results["config"]["tasks"]["guess"]["split"] == "dev"


def test_register_task_refuses_a_taken_name_and_bad_names(guess: Path) -> None:
    import guess_env

    assert register_task("guess", guess_env.GuessEnv) is TASKS["guess"]  # the same again: a no-op
    with pytest.raises(EnvError, match=re.escape("Task 'db' is already registered")):
        register_task("db", guess_env.GuessEnv)
    with pytest.raises(EnvError, match="must be a plain name"):
        register_task("my:task", guess_env.GuessEnv)
    with pytest.raises(EnvError, match=re.escape("Cannot import 'guess_env:Nope'")):
        resolve_task("guess_env:Nope")


def test_an_installed_package_adds_tasks_through_the_entry_point_group(
    guess: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dist = guess / "guess_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: guess-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[agentrl_envs.tasks]\nguess = guess_env:GuessEnv\n")
    load_entry_points()  # what `import agentrl_envs` does in a fresh process
    assert TASKS["guess"].entry_point == "guess_env:GuessEnv" and "guess_env" not in __import__("sys").modules
    output = guess.parent / "out"
    assert main(["--tasks", "guess", "--agent", "random", "--limit", "2", "--output", str(output)]) == 0
    assert read_outputs(output)[0]["tasks"]["guess"]["episodes"] == 2


def test_a_task_of_ones_own_is_given_no_agentbench_data_root(guess: Path) -> None:
    """``--data-root`` is AgentBench's: neither checked nor passed for a task of one's own (benchmark ``custom``)."""
    import guess_env  # noqa: F401 - registers "guess" on import

    assert TASKS["guess"].benchmark == "custom"
    output = guess.parent / "out"
    argv = ["--tasks", "guess", "--agent", "oracle", "--data-root", str(guess.parent / "absent"), "--limit", "1"]
    assert main([*argv, "--output", str(output)]) == 0
    results, _ = read_outputs(output)
    assert results["tasks"]["guess"]["success_rate"] == 1.0 and results["config"]["tasks"]["guess"]["options"] == {}
