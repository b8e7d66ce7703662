"""Defaults and safety of ``agentrl-eval``: endpoint checked first, runs that produced nothing fail, an output
directory is never overwritten by accident, and ``--resume`` plays only what an earlier (killed) run lacks."""

import json
import re
import signal
import socket
import time
from pathlib import Path

import pytest

from agentrl_envs.eval.cli import build_parser, main

from .openai_server import Canned, FakeOpenAIServer
from .test_cli import read_outputs, run_cli


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def openai_argv(toy: str, base_url: str, output: Path, *models: str) -> list[str]:
    argv = ["--tasks", toy, "--agent", "openai", "--base-url", base_url, "--output", str(output)]
    for model in models or ("m",):
        argv += ["--model", model]
    return argv


def test_help_shows_the_defaults() -> None:
    text = " ".join(build_parser().format_help().split())
    assert "suits an API server (default: 16)" in text
    assert "--max-retries MAX_RETRIES retries on 429/5xx/transport errors (default: 5)" in text
    assert build_parser().parse_args(["--tasks", "db"]).concurrency == 16


def test_unreachable_endpoint_exits_1_before_any_episode(toy: str, tmp_path: Path, capsys) -> None:
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    began = time.perf_counter()
    assert main(openai_argv(toy, base_url, tmp_path)) == 1
    assert time.perf_counter() - began < 10
    err = " ".join(capsys.readouterr().err.split())
    assert f"Cannot reach the model endpoint {base_url}/: ConnectError" in err
    assert (tmp_path / "episodes.jsonl").read_text() == "" and not (tmp_path / "results.json").exists()
    # Nothing ran, so nothing blocks the rerun once the server is up.
    server = FakeOpenAIServer(models=["m"]).start()
    try:
        assert main([*openai_argv(toy, server.base_url, tmp_path), "--limit", "1"]) == 0
    finally:
        server.stop()


def test_a_base_url_without_v1_gets_a_did_you_mean(toy: str, tmp_path: Path, openai_server, capsys) -> None:
    bare = openai_server.base_url.removesuffix("/v1")
    assert main([*openai_argv(toy, bare, tmp_path), "--max-retries", "0"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"Did you mean --base-url {bare}/v1?" in err
    assert main([*openai_argv(toy, openai_server.base_url, tmp_path), "--limit", "1"]) == 0


def test_failing_endpoint_and_unserved_model_exit_1(toy: str, tmp_path: Path, capsys) -> None:
    server = FakeOpenAIServer(models=["served-model"]).start()
    try:
        assert main(openai_argv(toy, server.base_url, tmp_path / "a", "other-model")) == 1
        err = " ".join(capsys.readouterr().err.split())
        assert "fails for model 'other-model': The model endpoint" in err and "answered HTTP 404" in err
        assert "It lists the models ['served-model'] (check --model)." in err
        server.models = None  # GET /models now 404: the check asks for a one-token completion, which fails
        server.script(*[Canned(503, '{"error": "overloaded"}')] * 2)
        assert main([*openai_argv(toy, server.base_url, tmp_path / "b"), "--max-retries", "1"]) == 1
        err = " ".join(capsys.readouterr().err.split())
        assert "fails for model 'm': HTTP 503 from the model endpoint" in err
    finally:
        server.stop()


def test_every_episode_cancelled_exits_1(toy: str, tmp_path: Path, capsys) -> None:
    server = FakeOpenAIServer(models=["m"]).start()  # up at the check, then every completion fails
    server.script(*[Canned(503, "{}")] * 5)
    try:
        assert main([*openai_argv(toy, server.base_url, tmp_path), "--max-retries", "0"]) == 1
    finally:
        server.stop()
    results, episodes = read_outputs(tmp_path)
    assert results["tasks"][toy]["status_counts"] == {"cancelled": 5}
    assert "no episode finished: every one was cancelled" in " ".join(capsys.readouterr().err.split())


def test_an_output_holding_a_run_is_refused_unless_overwrite_or_resume(toy: str, tmp_path: Path, capsys) -> None:
    argv = ["--tasks", toy, "--output", str(tmp_path)]
    assert main(argv) == 0
    first = (tmp_path / "results.json").read_text()
    assert main(argv) == 2
    assert "already holds a run (results.json, episodes.jsonl); pass --resume" in capsys.readouterr().err
    assert (tmp_path / "results.json").read_text() == first
    assert main([*argv, "--resume"]) == 0  # nothing missing: nothing played
    assert "0 episodes in" in capsys.readouterr().err
    assert len(read_outputs(tmp_path)[1]) == 5
    assert main([*argv, "--resume", "--runs", "2"]) == 2
    assert re.search(r"holds a different run \(runs: was 1, now 2\)", " ".join(capsys.readouterr().err.split()))
    assert main([*argv, "--overwrite", "--runs", "2"]) == 0
    results, episodes = read_outputs(tmp_path)
    assert len(episodes) == 10 and results["config"]["runs"] == 2


def test_resume_after_a_kill_plays_only_what_is_missing(tmp_path: Path) -> None:
    argv = ("--tasks", "toy", "--runs", "8", "--concurrency", "2", "--output", str(tmp_path))
    process = run_cli(*argv, TOY_ORACLE_DELAY_S="0.05")
    episodes = tmp_path / "episodes.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not episodes.exists() or episodes.read_text().count("\n") < 6):
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # no chance to write results.json
    process.communicate(timeout=30)
    assert not (tmp_path / "results.json").exists()
    done_before = {(e["index"], e["run"]) for e in map(json.loads, episodes.read_text().splitlines())}
    assert 6 <= len(done_before) < 40
    resumed = run_cli(*argv, "--resume")
    _, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert f"{len(done_before)} finished episodes kept" in err
    assert f"{40 - len(done_before)} episodes in" in err
    results, lines = read_outputs(tmp_path)
    keys = [(e["index"], e["run"]) for e in lines]
    assert len(keys) == len(set(keys)) == 40
    assert results["tasks"]["toy"]["episodes"] == 40 and results["tasks"]["toy"]["success_rate"] == 1.0


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model-weights", "1"], "gives 1 weights for 2 --model"),
        (["--model-weights", "a,b"], "is not a list of numbers"),
        (["--model-weights", "0,0"], "must be >= 0 and not all 0"),
    ],
)
def test_bad_model_weights_exit_2(toy: str, tmp_path: Path, capsys, extra: list[str], message: str) -> None:
    argv = openai_argv(toy, "http://127.0.0.1:9/v1", tmp_path, "a", "b")
    assert main([*argv, *extra]) == 2
    assert message in capsys.readouterr().err
