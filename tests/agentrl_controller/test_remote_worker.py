"""``agentrl-controller worker`` on "another host": registers by heartbeat (with the controller's token), serves
sessions through the controller, and is dropped, its sessions ended, when its heartbeats stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest
import yaml

from agentrl_envs.client import RemoteEnv
from tests.agentrl_controller.conftest import call, free_port, start_server, stop_server, toy_task

pytestmark = pytest.mark.slow

TOKEN = "remote-worker-token-0123456789"


def test_remote_worker_serves_sessions_and_is_dropped_when_silent(tmp_path) -> None:
    settings = {"token": TOKEN, "workers": {"heartbeat_timeout_s": 2.0}, "sessions": {"sweep_interval_s": 0.2}}
    server = start_server(tmp_path, [], **settings)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    config = tmp_path / "worker.yaml"
    config.write_text(yaml.safe_dump({"tasks": [toy_task().model_dump()]}))
    port = free_port()
    command = [sys.executable, "-m", "agentrl_controller.cli", "worker", "--task", "toy", "--config", str(config)]
    command += ["--controller", server.url, "--port", str(port), "--heartbeat-s", "0.5", "--token", TOKEN]
    log = (tmp_path / "worker.log").open("wb")
    worker = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not httpx.get(server.url + "/list_workers", headers=auth).json():
            assert worker.poll() is None and time.monotonic() < deadline, (tmp_path / "worker.log").read_text()
            time.sleep(0.2)
        (registered,) = httpx.get(server.url + "/list_workers", headers=auth).json()
        assert registered["task"] == "toy-std" and registered["kind"] == "remote"
        assert registered["address"] == f"http://127.0.0.1:{port}/api"

        env = RemoteEnv("toy-std", controller_url=server.url, token=TOKEN)
        env.reset(options={"index": 2})
        _, reward, terminated, _, info = env.step(call("answer", '{"value": 2}'))
        assert (reward, terminated, info["status"]) == (1.0, True, "completed")

        env.reset(options={"index": 1})  # left open while the worker goes silent
        os.killpg(worker.pid, signal.SIGSTOP)  # alive but mute: only the heartbeat timeout can notice
        deadline = time.monotonic() + 10
        while httpx.get(server.url + "/list_workers", headers=auth).json():
            assert time.monotonic() < deadline, "the silent worker was not dropped"
            time.sleep(0.2)
        _, _, _, truncated, info = env.step(call("echo", '{"text": "x"}'))
        assert truncated and info["status"] == "task error" and info["infra_error"] is True
        env.close()
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        log.close()
        stop_server(server)
