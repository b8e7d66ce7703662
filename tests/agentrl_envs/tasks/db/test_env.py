from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from agentrl_envs.core import DataError, EnvError, InfraError
from agentrl_envs.tasks.db.env import DBEnv

from .conftest import call, commit, reply, sql

TABLE = "`Jiu-Jitsu Championships Results`"  # test sample 0: "What are the Notes when the Method is decision?"


def test_check_env_passes(make_env: Callable[..., DBEnv]) -> None:
    check_env(make_env(), skip_render_check=True)


def test_reset_asks_the_question_as_upstream(make_env: Callable[..., DBEnv], data_root: Path) -> None:
    env = make_env()
    messages, info = env.reset(options={"index": 0})
    prompts = json.loads((data_root / "prompts.json").read_text())["tasks"]["dbbench"]
    assert messages[0] == {"role": "system", "content": prompts["system_prompt"]}
    assert messages[1]["content"] == (
        "Additional table information about the question: The name of this table is Jiu-Jitsu Championships "
        "Results, and the headers of this table are Result,Opponent,Method,Event,Notes.\n"
        "Question: What are the Notes when the Method is decision?\n"
    )
    assert [t["function"]["name"] for t in info["tools"]] == ["execute_sql", "commit_final_answer"]
    assert info["fidelity"] == ("emulated" if info["backend"] == "sqlite" else "upstream")
    assert (info["task"], info["split"], info["index"], info["status"]) == ("db", "test", 0, "running")
    assert env.max_rounds == 15


def test_a_sample_declares_the_names_its_prompt_holds(make_env: Callable[..., DBEnv]) -> None:
    env = make_env()
    names = env.copyable_names(0)
    assert names["Jiu-Jitsu Championships Results"] == "table"
    assert {n for n, kind in names.items() if kind == "column"} == {"Result", "Opponent", "Method", "Event", "Notes"}
    assert names["Venla Luukkonen"] == names["Points (11 x 0)"] == "value"  # the rows' text cells
    assert not any(name.replace(".", "").replace(":", "").isdigit() for name in names)  # numbers are not names
    messages, _ = env.reset(options={"index": 0})
    assert all(name in messages[1]["content"] for name, kind in names.items() if kind != "value")


def test_execute_sql_returns_rows_as_mysql_connector_prints_them(make_env: Callable[..., DBEnv]) -> None:
    env = make_env()
    env.reset(options={"index": 0})
    obs, reward, terminated, truncated, info = env.step(
        sql(f"SELECT Notes, Result FROM {TABLE} WHERE Method = 'decision'")
    )
    assert obs == [{"role": "tool", "tool_call_id": "c1", "content": "[('Women +60kg Bronze', 'Win')]"}]
    assert (reward, terminated, truncated, info["status"]) == (0.0, False, False, "running")
    assert env.step(sql(f"UPDATE {TABLE} SET Notes = 'x' WHERE Result = 'nobody'"))[0][0]["content"] == "[]"
    assert env.step(sql(f"SELECT COUNT(*) FROM {TABLE}"))[0][0]["content"] == "[(18,)]"


def test_every_tool_call_is_answered_in_order(make_env: Callable[..., DBEnv]) -> None:
    env = make_env()
    env.reset(options={"index": 0})
    obs = env.step(
        reply(
            call("execute_sql", {"query": "SELECT 1"}, "a"),
            call("nope", {}, "b"),
            call("execute_sql", {"query": "SELECT 2"}, "c"),
        )
    )[0]
    assert [(m["tool_call_id"], m["content"]) for m in obs] == [
        ("a", "[(1,)]"),
        ("b", "Invalid function call. Please call a tool instead."),
        ("c", "[(2,)]"),
    ]


def test_results_are_cut_at_800_characters(make_env: Callable[..., DBEnv]) -> None:
    env = make_env()
    env.reset(options={"index": 0})
    content = env.step(sql(f"SELECT * FROM {TABLE}"))[0][0]["content"]
    assert len(content) == 800 + len("[TRUNCATED]") and content.endswith("[TRUNCATED]")
    assert content.startswith("[('Win', 'Venla Luukkonen', 'Points (11 x 0)'")


def test_no_tool_call_gets_upstream_user_message(make_env: Callable[..., DBEnv]) -> None:
    env = make_env()
    env.reset(options={"index": 0})
    obs, _, terminated, _, info = env.step({"role": "assistant", "content": "I think it is Vienna."})
    assert obs == [{"role": "user", "content": "Internal error: No tool calls found despite finish reason."}]
    assert not terminated and info["status"] == "running"


def test_correct_and_wrong_answers(make_env: Callable[..., DBEnv]) -> None:
    env = make_env()
    env.reset(options={"index": 0})
    _, reward, terminated, _, info = env.step(commit(["Women +60kg Bronze"]))
    assert (reward, terminated, info["status"], info["score"], info["is_correct"]) == (
        1.0,
        True,
        "completed",
        1.0,
        True,
    )
    env.reset(options={"index": 0})
    _, reward, terminated, _, info = env.step(commit(["Women +60kg Silver"]))
    assert (reward, terminated, info["status"], info["is_correct"]) == (0.0, True, "completed", False)


def test_modification_is_graded_by_table_hash(make_env: Callable[..., DBEnv]) -> None:
    env = make_env()
    sample = env.samples[100]  # an INSERT sample
    assert sample.query_type == "INSERT"
    env.reset(options={"index": 100})
    _, reward, *_ = env.step(commit(["anything"]))
    assert reward == 0.0  # nothing inserted: the table hash is the original one
    env.reset(options={"index": 100})
    env.step(sql(sample.label[0]))
    _, reward, *_ = env.step(commit([]))
    assert reward == 1.0


def test_round_limit_ends_as_task_limit_reached(make_env: Callable[..., DBEnv]) -> None:
    env = make_env(max_rounds=2)
    env.reset(options={"index": 0})
    assert env.step(sql("SELECT 1"))[4]["status"] == "running"
    _, reward, terminated, truncated, info = env.step(sql("SELECT 1"))
    assert (reward, terminated, truncated, info["status"]) == (0.0, False, True, "task limit reached")


def test_text_mode_plays_a_sample(make_env: Callable[..., DBEnv]) -> None:
    env = make_env(mode="text")
    env.reset(options={"index": 0})
    obs, *_ = env.step(f'Let me look.\nAction: execute_sql\n{{"query": "SELECT Notes FROM {TABLE} LIMIT 1"}}')
    assert obs == [{"role": "user", "content": "[('Female Purple Belt Final',)]"}]
    _, reward, terminated, _, info = env.step('Action: commit_final_answer\n{"answers": ["Women +60kg Bronze"]}')
    assert (reward, terminated, info["status"]) == (1.0, True, "completed")


def test_async_twins(make_env: Callable[..., DBEnv]) -> None:
    env = make_env()

    async def play() -> float:
        await env.areset(options={"index": 0})
        return (await env.astep(commit(["Women +60kg Bronze"])))[1]

    assert asyncio.run(play()) == 1.0


def test_dev_split_and_upstream_names() -> None:
    import agentrl_envs

    env = agentrl_envs.make("dbbench-dev").unwrapped
    try:
        assert env.split == "dev" and env.num_samples() == 60
    finally:
        env.close()


def test_train_split_needs_a_file(tmp_path: Path, data_root: Path) -> None:
    with pytest.raises(DataError, match="train_file"):
        gym.make("AgentBench/DB-v0", split="train")
    first = (data_root / "data/dbbench/dev.jsonl").read_text().splitlines()[:3]
    train = tmp_path / "train.jsonl"
    train.write_text("\n".join(first) + "\n")
    env = gym.make("AgentBench/DB-v0", split="train", train_file=str(train)).unwrapped
    try:
        assert env.num_samples() == 3
        env.reset(options={"index": 0})
    finally:
        env.close()


def test_bad_options_are_refused() -> None:
    with pytest.raises(EnvError, match="Unknown DB backend 'postgres'"):
        gym.make("AgentBench/DB-v0", backend="postgres")
    with pytest.raises(EnvError, match="query_timeout_s must be positive"):
        gym.make("AgentBench/DB-v0", query_timeout_s=0)
    with pytest.raises(EnvError, match="mariadb_url is only used by backend='mariadb'"):
        gym.make("AgentBench/DB-v0", mariadb_url="mysql://root@localhost/")


def test_sample_mysql_cannot_create_fails_at_reset(make_env: Callable[..., DBEnv]) -> None:
    env = make_env(split="dev")
    with pytest.raises(InfraError, match="Incorrect column name ''"):
        env.reset(options={"index": 5})  # a column named "": MySQL refuses the table, as upstream's server did
    env.reset(options={"index": 6})
