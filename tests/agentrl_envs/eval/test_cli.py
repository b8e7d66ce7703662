import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentrl_envs.eval.cli import main

from .openai_server import Canned, FakeOpenAIServer, completion
from .toy_task import FLAKY_START, FLAKY_STEP, call

REPO = Path(__file__).resolve().parents[3]
TASK_KEYS = {"n", "runs", "success_rate", "mean_reward", "std", "status_counts"}
EPISODE_KEYS = {"task", "split", "index", "run", "messages", "tool_calls", "rewards", "status", "score", "timings"}


def read_outputs(output: Path) -> tuple[dict, list[dict]]:
    results = json.loads((output / "results.json").read_text())
    episodes = [json.loads(line) for line in (output / "episodes.jsonl").read_text().splitlines()]
    return results, episodes


def test_oracle_run_writes_results_and_episodes(toy: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["--tasks", toy, "--agent", "oracle", "--concurrency", "2", "--runs", "2", "--output", str(tmp_path)])
    assert code == 0
    results, episodes = read_outputs(tmp_path)
    assert {"tasks", "average", "config", "usage", "turns_by_model"} <= set(results)
    figures = results["tasks"][toy]
    assert TASK_KEYS <= set(figures)
    assert figures["n"] == 5 and figures["runs"] == 2 and figures["success_rate"] == 1.0 and figures["std"] == 0.0
    assert figures["mean_reward"] == 1.0 and figures["status_counts"] == {"completed": 10}
    assert results["average"] == 1.0
    assert len(episodes) == 10 and all(EPISODE_KEYS <= set(e) for e in episodes)
    assert {(e["index"], e["run"]) for e in episodes} == {(i, r) for i in range(5) for r in range(2)}
    assert episodes[0]["infra_error"] is False and episodes[0]["tool_calls"][0]["function"]["name"] == "echo"
    table = capsys.readouterr().out
    assert "toy" in table and "100.0%" in table


def test_random_agent_with_indices_limit_and_backend(toy: str, tmp_path: Path) -> None:
    argv = ["--tasks", toy, "--agent", "random", "--seed", "3", "--indices", f"0,{FLAKY_START},{FLAKY_STEP},3-4"]
    assert main([*argv, "--limit", "4", "--backend", "flaky", "--output", str(tmp_path)]) == 0
    results, episodes = read_outputs(tmp_path)
    assert sorted(e["index"] for e in episodes) == [0, FLAKY_START, FLAKY_STEP, 3]
    figures = results["tasks"][toy]
    assert figures["n"] == 4 and figures["infra_errors"] == 2 and figures["episodes"] == 4
    assert figures["status_counts"]["task error"] >= 2


def test_options_reach_the_env(toy: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["--tasks", toy, "--option", "max_rounds=1", "--option", "fail_on=step", "--limit", "1"]
    assert main([*argv, "--output", str(tmp_path)]) == 1  # nothing but infrastructure errors: the run failed
    assert "no episode finished" in capsys.readouterr().err
    _, episodes = read_outputs(tmp_path)
    assert episodes[0]["infra_error"] and "backend down" in episodes[0]["error"]


def test_openai_agent_from_the_cli(toy: str, tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Canned(429, "{}", {"Retry-After": "0"}))
    argv = ["--tasks", toy, "--agent", "openai", "--base-url", openai_server.base_url, "--model", "toy-1"]
    assert main([*argv, "--api-key", "k", "--temperature", "0", "--output", str(tmp_path), "--limit", "2"]) == 0
    results, episodes = read_outputs(tmp_path)
    assert results["tasks"][toy]["success_rate"] == 1.0
    assert openai_server.requests[0]["temperature"] == 0.0 and openai_server.headers[0]["Authorization"] == "Bearer k"
    config = results["config"]
    assert config["agent"] == "openai" and config["models"] == ["toy-1"] and config["sampling"] == {"temperature": 0}
    assert config["base_url"] == openai_server.base_url and config["tasks"][toy]["fidelity"] == "upstream"
    # The stub reports one prompt token per message sent and 3 completion tokens per turn: turn 1 sends the
    # system and user messages, turn 2 those plus the assistant echo and the tool reply.
    assert [e["usage"] for e in episodes] == [{"prompt_tokens": 6, "completion_tokens": 6, "total_tokens": 12}] * 2
    assert [t["prompt_tokens"] for t in episodes[0]["turns"]] == [2, 4]
    assert {t["model"] for e in episodes for t in e["turns"]} == {"toy-1"}
    assert results["usage"] == {"prompt_tokens": 12, "completion_tokens": 12, "total_tokens": 24, "episodes": 2}


def test_openai_key_rejected_exits_1(toy: str, tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Canned(401, '{"error": "invalid api key"}'))
    argv = ["--tasks", toy, "--agent", "openai", "--base-url", openai_server.base_url, "--model", "m"]
    assert main([*argv, "--output", str(tmp_path)]) == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tasks", "dbb"], "Did you mean 'db'?"),
        (["--tasks", "toy", "--agent", "openai"], "--agent openai needs --base-url and --model"),
        (["--tasks", "toy", "--agent", "openai", "--base-url", "http://x"], "needs --model"),
        (["--tasks", "toy", "--concurrency", "0"], "--concurrency must be at least 1"),
        (["--tasks", "toy", "--indices", "1,x"], "--indices: 'x' is not an index"),
        (["--tasks", "toy", "--indices", "9"], "Indices [9] are out of range"),
        (["--tasks", "toy,toy"], "given twice"),
        (["--tasks", "dbbench-dev", "--split", "test"], "names the dev split but --split says test"),
        (["--tasks", "toy", "--data-root", "/nonexistent"], "No AgentBench data root at /nonexistent"),
        (["--tasks", "toy", "--option", "train_file"], "is not KEY=VALUE"),
        (["--tasks", "toy", "--option", "backend=x"], "use --backend"),
        (["--tasks", "toy", "--backend", "nosuch"], "unknown toy backend 'nosuch'"),
        (["--tasks", "toy", "--option", "colour=1"], "unexpected keyword argument 'colour'"),
    ],
)
def test_bad_flags_exit_2_with_a_clear_message(
    toy: str, tmp_path: Path, capsys: pytest.CaptureFixture, argv: list[str], message: str
) -> None:
    assert main([*argv, "--output", str(tmp_path)]) == 2
    assert message in capsys.readouterr().err


def run_cli(*argv: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.agentrl_envs.eval.toy_task", *argv],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As from a terminal: a test run started in the background (`make test &`) ignores SIGINT, and its
        # children would inherit that, so Ctrl-C would never reach the CLI.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_ctrl_c_stops_cleanly_and_keeps_finished_episodes(tmp_path: Path) -> None:
    process = run_cli("--tasks", "toy", "--runs", "50", "--output", str(tmp_path), TOY_ORACLE_DELAY_S="0.02")
    episodes = tmp_path / "episodes.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not episodes.exists() or episodes.read_text().count("\n") < 3):
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130, err
    assert "Interrupted" in err
    results, lines = read_outputs(tmp_path)
    figures = results["tasks"]["toy"]
    assert 3 <= figures["episodes"] == len(lines) < 250
    assert figures["success_rate"] == 1.0


def test_db_oracle_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["--tasks", "dbbench-std", "--agent", "oracle", "--backend", "sqlite", "--concurrency", "2"]
    assert main([*argv, "--indices", "0-9", "--output", str(tmp_path)]) == 0
    results, episodes = read_outputs(tmp_path)
    figures = results["tasks"]["db"]
    assert figures["n"] == 10 and figures["successes"] == 10 and figures["infra_errors"] == 0
    assert all(e["info"]["backend"] == "sqlite" and e["split"] == "test" for e in episodes)
    assert figures["fidelity"] == "emulated" and figures["backend"] == "sqlite"
    config = results["config"]
    assert config["tasks"]["db"] == {
        "split": "test",
        "options": {"backend": "sqlite"},
        "indices": list(range(10)),
        "limit": None,
        "backend": "sqlite",
        "fidelity": "emulated",
        "n": 10,
    }
    assert config["data"]["commit"].startswith("578c5e9") and config["versions"]["agentrl-envs"]
    out = capsys.readouterr().out
    assert "emulated (sqlite)" in out
    assert out.count("come from emulated backends") == 1 and "not comparable with AgentBench" in out


def test_openai_agent_plays_db_over_http(tmp_path: Path, openai_server: FakeOpenAIServer) -> None:
    """A model behind real HTTP queries the table with a tool call, reads the result and commits it."""
    query = "SELECT Notes FROM `Jiu-Jitsu Championships Results` WHERE Method = 'Decision'"
    openai_server.models = ["m"]  # the endpoint check lists models: the scripted replies are all the episode's
    openai_server.script(
        Canned(body=json.dumps(completion(call("execute_sql", call_id="q", query=query), "m"))),
        Canned(503, "{}", {"Retry-After": "0"}),
        Canned(body=json.dumps(completion(call("commit_final_answer", answers=["Women +60kg Bronze"]), "m"))),
    )
    argv = ["--tasks", "db", "--agent", "openai", "--base-url", openai_server.base_url, "--model", "m"]
    assert main([*argv, "--indices", "0", "--output", str(tmp_path)]) == 0
    results, episodes = read_outputs(tmp_path)
    assert results["tasks"]["db"]["successes"] == 1
    tool_reply = openai_server.requests[-1]["messages"][-1]
    assert tool_reply == {"role": "tool", "tool_call_id": "q", "content": "[('Women +60kg Bronze',)]"}
    assert [t["function"]["name"] for t in openai_server.requests[0]["tools"]] == ["execute_sql", "commit_final_answer"]
    assert [c["function"]["name"] for c in episodes[0]["tool_calls"]] == ["execute_sql", "commit_final_answer"]
