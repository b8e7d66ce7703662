"""Bad model output on both backends: each yields a clear message, nothing escapes ``step`` and nothing outside
the episode's own database changes."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentrl_envs.tasks.db.env import DBEnv

from .conftest import call, commit, reply, sql

TABLE = "`Jiu-Jitsu Championships Results`"
TIMEOUT_MESSAGE = "Error: SQL execution timed out."


def first_reply(env: DBEnv, action: dict) -> str:
    obs, reward, terminated, truncated, info = env.step(action)
    assert info["status"] == "running" and not info["infra_error"]
    return obs[0]["content"]


@pytest.fixture
def env(make_env: Callable[..., DBEnv]) -> DBEnv:
    env = make_env(query_timeout_s=1, max_rounds=50)
    env.reset(options={"index": 0})
    return env


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (
            reply(call("execute_sql", '{"query": "SELECT 1"')),
            "Error: Failed to parse tool call. Tool call format is incorrect.",
        ),
        (reply(call("execute_sql", "[1, 2]")), "Error: Failed to parse tool call. Tool call format is incorrect."),
        (reply(call("drop_everything", {})), "Invalid function call. Please call a tool instead."),
        (reply(call("execute_sql", {})), "Error: Invalid arguments for 'execute_sql': 'query' is a required property."),
        (reply(call("execute_sql", {"query": "SELECT 1", "db": "x"})), "Additional properties are not allowed ('db'"),
        (reply(call("execute_sql", {"query": 5})), "Invalid arguments for 'execute_sql': 5 is not of type 'string'"),
        (reply(call("commit_final_answer", {})), "'answers' is a required property"),
        (reply(call("commit_final_answer", {"answers": "Vienna"})), "'Vienna' is not of type 'array'"),
        (reply(call("commit_final_answer", {"answers": [1]})), "1 is not of type 'string' (at answers/0)"),
    ],
)
def test_malformed_calls_get_tool_messages(env: DBEnv, action: dict, expected: str) -> None:
    assert expected in first_reply(env, action)


def test_commit_with_no_answers_is_a_wrong_answer(env: DBEnv) -> None:
    _, reward, terminated, _, info = env.step(commit([]))
    assert (reward, terminated, info["status"], info["infra_error"]) == (0.0, True, "completed", False)


def test_100_kb_argument(env: DBEnv) -> None:
    content = first_reply(env, sql("SELECT '" + "a" * 100_000 + "'"))
    assert content == "[('" + "a" * 797 + "[TRUNCATED]"
    garbage = first_reply(env, sql("x" * 100_000))
    assert garbage.startswith("1064 (42000): ") and len(garbage) <= 811


def test_nul_bytes(env: DBEnv) -> None:
    assert first_reply(env, sql("SELECT 'a\0b'")) == "[('a\\x00b',)]"
    assert first_reply(env, sql("SELECT 'a\\0b'")) == "[('a\\x00b',)]"
    first_reply(env, sql("SELECT 1\0 FROM nowhere"))  # whatever the engine says, step answers
    assert first_reply(env, sql("SELECT 3")) == "[(3,)]"


def test_syntax_errors_read_like_mysql(env: DBEnv) -> None:
    assert first_reply(env, sql("SELEC Notes FROM t")).startswith("1064 (42000): ")
    assert first_reply(env, sql("SELECT * FROM missing_table")).startswith("1146 (42S02): ")


def test_drop_table_changes_only_the_episode(env: DBEnv, make_env: Callable[..., DBEnv]) -> None:
    other = make_env()
    other.reset(options={"index": 0})
    assert first_reply(env, sql(f"DROP TABLE {TABLE}")) == "[]"
    assert first_reply(env, sql(f"SELECT COUNT(*) FROM {TABLE}")).startswith("1146 (42S02): ")
    assert first_reply(other, sql(f"SELECT COUNT(*) FROM {TABLE}")) == "[(18,)]"
    _, reward, *_ = env.step(commit(["Women +60kg Bronze"]))
    env.reset(options={"index": 0})
    assert first_reply(env, sql(f"SELECT COUNT(*) FROM {TABLE}")) == "[(18,)]"


def test_drop_table_of_a_modification_sample_scores_zero(env: DBEnv) -> None:
    env.reset(options={"index": 100})
    table = env.samples[100].tables[0].name
    first_reply(env, sql(f"DROP TABLE `{table}`"))
    _, reward, terminated, _, info = env.step(commit([]))
    assert (reward, terminated, info["infra_error"]) == (0.0, True, False)


@pytest.mark.parametrize(
    "statement",
    [
        "ATTACH DATABASE '{path}' AS pwn",
        "VACUUM INTO '{path}'",
        "SELECT 1 INTO OUTFILE '{path}'",
        "SELECT load_extension('{path}')",
    ],
)
def test_file_access_is_refused(env: DBEnv, tmp_path: Path, statement: str) -> None:
    target = tmp_path / "written.db"
    content = first_reply(env, sql(statement.format(path=target)))
    assert content[:4] in ("1064", "1227", "1305", "1045"), content
    assert not target.exists()


def test_files_cannot_be_read(env: DBEnv) -> None:
    for statement in ("ATTACH DATABASE '/etc/passwd' AS p", "SELECT LOAD_FILE('/etc/passwd')"):
        assert "root:" not in first_reply(env, sql(statement))


def test_sleep_times_out(env: DBEnv) -> None:
    start = time.monotonic()
    assert first_reply(env, sql("SELECT SLEEP(100)")) == TIMEOUT_MESSAGE
    assert time.monotonic() - start < 5
    assert first_reply(env, sql("SELECT SLEEP(0.01)")) == "[(0,)]"


def test_infinite_recursive_cte_cannot_hang(env: DBEnv) -> None:
    start = time.monotonic()
    count = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c"
    content = first_reply(env, sql(count))
    # SQLite runs until the time limit; MariaDB stops at MySQL 8's recursion limit of 1000 iterations
    assert content in (TIMEOUT_MESSAGE, "[(1001,)]")
    rows = first_reply(env, sql("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c"))
    assert rows.startswith("[(1,), (2,), (3,)") and rows.endswith("[TRUNCATED]")
    assert time.monotonic() - start < 6
    assert first_reply(env, sql("SELECT 4")) == "[(4,)]"


@pytest.mark.mariadb
@pytest.mark.parametrize("backend", ["mariadb"], indirect=True)
def test_mariadb_time_limit_holds_when_the_agent_lifts_it(env: DBEnv) -> None:
    assert first_reply(env, sql("SET SESSION max_statement_time = 0")) == "[]"
    start = time.monotonic()
    assert first_reply(env, sql("SELECT SLEEP(100)")) == TIMEOUT_MESSAGE
    assert time.monotonic() - start < 5
    assert first_reply(env, sql("SELECT 5")) == "[(5,)]"


@pytest.mark.mariadb
@pytest.mark.parametrize("backend", ["mariadb"], indirect=True)
def test_mariadb_episode_cannot_reach_other_databases(env: DBEnv) -> None:
    assert first_reply(env, sql("DROP DATABASE mysql")).startswith("1044 (42000): Access denied")
    assert first_reply(env, sql("SELECT COUNT(*) FROM mysql.user")).startswith("1142 (42000): ")
    databases = first_reply(env, sql("SHOW DATABASES"))
    assert "mysql" not in databases.replace("information_schema", "")


@pytest.mark.mariadb
@pytest.mark.parametrize("backend", ["mariadb"], indirect=True)
def test_mariadb_agent_killing_its_own_connection_is_not_an_infra_error(env: DBEnv) -> None:
    """``KILL CONNECTION_ID()`` is model output: the next statement says the connection was lost, then works."""
    assert first_reply(env, sql("KILL CONNECTION_ID()")).startswith("1927 (HY000): ")
    assert first_reply(env, sql("SELECT 6")).startswith("2006 (HY000): MySQL server has gone away")
    assert first_reply(env, sql("SELECT 7")) == "[(7,)]"
    start = time.monotonic()
    assert first_reply(env, sql("SELECT SLEEP(100)")) == TIMEOUT_MESSAGE  # the new connection keeps the limits
    assert time.monotonic() - start < 5
    _, reward, terminated, _, info = env.step(commit(["Women +60kg Bronze"]))
    assert terminated and info["infra_error"] is False


@pytest.mark.mariadb
@pytest.mark.parametrize("backend", ["mariadb"], indirect=True)
def test_mariadb_unreachable_after_a_lost_connection_is_an_infra_error(env: DBEnv, monkeypatch) -> None:
    from agentrl_envs.core.errors import InfraError

    def refuse(slot: object) -> None:
        raise InfraError("Cannot connect to MariaDB (test): the server is down")

    first_reply(env, sql("KILL CONNECTION_ID()"))
    monkeypatch.setattr(env.backend, "connect_as", refuse)
    _, _, _, truncated, info = env.step(sql("SELECT 1"))
    assert truncated and info["status"] == "task error" and info["infra_error"] is True
    assert "reconnecting failed too" in info["error"]
