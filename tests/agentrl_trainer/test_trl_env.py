"""The TRL adapter: our DB env through TRL's ``environment_factory`` interface, tools as TRL discovers them."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pytest
from transformers.utils import get_json_schema

import agentrl_envs
from agentrl_envs.core.oracle import load_oracle
from agentrl_trainer.trl_env import TRLEnvironment, trl_dataset, trl_environment


def make_db() -> Any:
    return agentrl_envs.make("db", split="dev", backend="sqlite").unwrapped


@pytest.fixture(scope="module")
def db_environment() -> type[TRLEnvironment]:
    return trl_environment(make_db)


def trl_tools(environment: TRLEnvironment) -> dict[str, Any]:
    """The tools TRL's GRPOTrainer finds on an environment: public functions of its class, bar reset/get_reward."""
    return {
        name: getattr(environment, name)
        for name, _ in inspect.getmembers(type(environment), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def test_tools_render_to_the_task_schemas(db_environment: type[TRLEnvironment]) -> None:
    environment = db_environment()
    tools = trl_tools(environment)
    assert type(environment).__name__ == "DbEnvironment"
    for schema in environment.env.tools:
        function = dict(schema["function"])
        rendered = get_json_schema(tools[function["name"]])["function"]
        parameters = {k: v for k, v in function["parameters"].items() if k != "additionalProperties"}
        assert (rendered["name"], rendered["description"]) == (function["name"], function["description"])
        assert rendered["parameters"] == parameters
    assert sorted(tools) == sorted(s["function"]["name"] for s in environment.env.tools)


@pytest.mark.parametrize("index", [0, 1, 2])
def test_oracle_plays_a_db_episode_through_trl_interface(db_environment: type[TRLEnvironment], index: int) -> None:
    row = trl_dataset(make_db, [index])[0]
    assert row["index"] == index and [m["role"] for m in row["prompt"]] == ["system", "user"]
    environment = db_environment()
    tools = trl_tools(environment)
    assert environment.reset(**row) is None  # the question is already the row's prompt
    oracle = load_oracle("db", split="dev")
    oracle.begin(index)
    observation: list[dict[str, Any]] = row["prompt"]
    while not environment.is_done:
        (call,) = oracle.act(observation)["tool_calls"]
        name, arguments = call["function"]["name"], json.loads(call["function"]["arguments"])
        observation = [{"role": "tool", "content": tools[name](**arguments)}]
        assert environment.steps <= 15
    assert environment.get_reward() == 1.0
    assert tools["execute_sql"](query="SELECT 1") == "The episode has ended; no further tool calls are answered."


def test_a_sample_that_cannot_start_is_left_out_of_the_dataset_with_a_warning(caplog: Any) -> None:
    # DB dev sample 5 has a column named '' (upstream's MySQL refuses it): TRL would fail on it mid-run.
    with caplog.at_level("WARNING", logger="agentrl_trainer.trl_env"):
        dataset = trl_dataset(make_db, [4, 5, 6])
    assert dataset["index"] == [4, 6]
    assert "sample 5 cannot start" in caplog.text and "Incorrect column name" in caplog.text


def test_reset_starts_a_fresh_episode(db_environment: type[TRLEnvironment]) -> None:
    environment = db_environment()
    environment.reset(index=0)
    environment.commit_final_answer(answers=["surely wrong"])
    assert environment.is_done and environment.get_reward() == 0.0
    environment.reset(index=1)
    assert not environment.is_done and environment.steps == 0
    assert environment.execute_sql(query="SELECT 1") == "[(1,)]"


def test_unrenderable_json_type_is_named() -> None:
    from agentrl_trainer.trl_env import _tool_method

    function = {"name": "f", "description": "F.", "parameters": {"properties": {"x": {"type": "null"}}}}
    with pytest.raises(ValueError, match=re.escape("Tool 'f', parameter 'x': JSON type 'null'")):
        _tool_method(function)


def test_trl_grpo_trainer_takes_the_adapter(tiny_model_path: Any, tokenizer: Any, tmp_path: Any) -> None:
    """TRL's own set-up probes the class: reset found, the task's tools exposed, get_reward a reward source."""
    import warnings

    from trl import GRPOConfig, GRPOTrainer

    environment = trl_environment(make_db, name="DB")
    config = GRPOConfig(
        output_dir=str(tmp_path),
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        report_to="none",
        use_cpu=True,
        bf16=False,
    )
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*experimental feature.*")
        trainer = GRPOTrainer(
            str(tiny_model_path),
            args=config,
            train_dataset=trl_dataset(make_db, [0, 1], environment="db"),
            processing_class=tokenizer,
            environment_factory={"db": environment},
        )
    assert sorted(tool.__name__ for tool in trainer.tools) == ["commit_final_answer", "execute_sql"]
    assert trainer.reward_func_names == ["DB"]
