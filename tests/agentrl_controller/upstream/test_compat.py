"""Upstream AgentRL's published ``agentrl-eval`` and ``agentrl-worker`` (from PyPI, in their own venv) against us.

- the eval client runs DB samples through our controller and every sample finishes (no ``server error``);
- an upstream worker registers by heartbeat and serves sessions to our clients (RemoteEnv, and upstream's eval
  client again), and a kill -9 of it ends its open session as a task error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from agentrl_controller.config import TaskConfig
from agentrl_envs.client import RemoteEnv
from tests.agentrl_controller.conftest import Server, call, free_port, start_server, stop_server
from tests.agentrl_controller.upstream.venv import upstream_venv

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
FINISHED = {"completed", "task limit reached", "agent validation failed", "agent invalid action", "unknown"}


@pytest.fixture(scope="module")
def venv() -> Path:
    return upstream_venv()


def run_eval(venv: Path, url: str, task: str, output: Path, *extra: str) -> list[dict]:
    """Upstream ``agentrl-eval`` with its dummy model (no pauses); returns its ``results.jsonl`` rows."""
    command = [str(venv / "bin" / "agentrl-eval"), "--no-interactive", "--client", "dummy"]
    command += ["--models", '[{"interval": 0}]', "-c", url, "-o", str(output), *extra, task]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (results,) = output.glob("*/results.jsonl")
    return [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


def test_upstream_eval_runs_db_samples_through_the_controller(venv, tmp_path) -> None:
    db = TaskConfig(name="dbbench-std", env="db", options={"backend": "sqlite", "max_rounds": 3}, lazy=False)
    server = start_server(tmp_path, [db])
    try:
        rows = run_eval(venv, server.url, "dbbench-std", tmp_path / "out", "-j", "4", "--indices-range", "0-7")
        sessions = httpx.get(server.url + "/list_sessions").json()
    finally:
        stop_server(server)
    assert sorted(row["index"]["int_value"] for row in rows) == list(range(8))
    # The dummy model only writes text, so every sample ends at the round limit: finished, not an error.
    assert Counter(row["status"] for row in rows) == {"task limit reached": 8}
    assert len({row["session_id"] for row in rows}) == 8
    assert sessions == []  # eval never cancels after a finish: the controller freed them itself
    trace = json.dumps(json.loads(next((tmp_path / "out").glob("*/*/trace.json")).read_text()))
    assert "Are you done?" in trace and "MySQL" in trace  # the DB chat reached eval


@pytest.fixture
def upstream_worker(venv, tmp_path) -> Iterator[tuple[Server, subprocess.Popen[bytes]]]:
    """Our controller with no local task, and upstream's worker serving ``echo-task`` registered with it."""
    server = start_server(tmp_path, [])
    port = free_port()
    config = tmp_path / "worker.yaml"
    task = {"module": "echo_task.EchoTask", "parameters": {"name": "echo-task", "concurrency": 4}}
    config.write_text(yaml.safe_dump({"echo-task": task}))
    command = [str(venv / "bin" / "python"), "-m", "agentrl.worker", "echo-task", "-c", str(config)]
    command += ["-C", server.url, "-s", f"http://127.0.0.1:{port}/api", "--host", "127.0.0.1", "-p", str(port)]
    log = (tmp_path / "worker.log").open("wb")
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    worker = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not [w for w in httpx.get(server.url + "/list_workers").json() if w["task"] == "echo-task"]:
            assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.2)
        yield server, worker
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        log.close()
        stop_server(server)


def test_upstream_worker_registers_and_serves_sessions(upstream_worker, venv, tmp_path) -> None:
    server, _ = upstream_worker
    (worker,) = httpx.get(server.url + "/list_workers").json()
    assert (worker["kind"], worker["concurrency"]) == ("remote", 4)
    assert httpx.get(server.url + "/get_indices", params={"name": "echo-task"}).json() == list(range(10))

    env = RemoteEnv("echo-task", controller_url=server.url)
    messages, info = env.reset(options={"index": 7})
    assert [m["role"] for m in messages] == ["system", "user"] and {t["function"]["name"] for t in info["tools"]} == {
        "echo",
        "answer",
    }
    messages, reward, terminated, _, info = env.step(call("echo", '{"text": "hi"}'))
    assert messages == [{"role": "tool", "tool_call_id": "call_1", "content": "hi"}] and not terminated
    _, reward, terminated, truncated, info = env.step(call("answer", '{"value": 7}', call_id="call_2"))
    assert (reward, terminated, truncated, info["status"], info["score"]) == (1.0, True, False, "completed", 1.0)
    env.reset(options={"index": 1})  # an open episode, cancelled by close()
    env.close()

    rows = run_eval(venv, server.url, "echo-task", tmp_path / "out", "-j", "3", "--indices-range", "0-5")
    assert sorted(row["index"]["int_value"] for row in rows) == list(range(6))
    assert {row["status"] for row in rows} == {"task limit reached"}
    assert httpx.get(server.url + "/list_sessions").json() == []


def test_killed_upstream_worker_ends_its_session_as_task_error(upstream_worker) -> None:
    server, worker = upstream_worker
    env = RemoteEnv("echo-task", controller_url=server.url)
    env.reset(options={"index": 2})
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait()
    began = time.monotonic()
    _, reward, terminated, truncated, info = env.step(call("echo", '{"text": "anyone?"}'))
    assert (info["status"], info["infra_error"], reward, terminated, truncated) == (
        "task error",
        True,
        0.0,
        False,
        True,
    )
    assert time.monotonic() - began < 10
    env.close()
