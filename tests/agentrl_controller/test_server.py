"""The real service: ``agentrl-controller serve`` as a process, over TCP."""

import os
import signal
import time

import httpx
import pytest

from tests.agentrl_controller.conftest import call, start_server, stop_server, toy_task

pytestmark = pytest.mark.slow


def test_episode_over_tcp(server) -> None:
    with httpx.Client(base_url=server.url + "/") as client:
        assert client.get("get_indices", params={"name": "toy"}).json() == [0, 1, 2, 3, 4]
        started = client.post("start_sample", json={"name": "toy-std", "index": 4, "custom_task": None})
        sid = started.headers["session_id"]
        out = client.post("interact", headers={"session_id": sid}, json={"messages": [call("answer", '{"value": 4}')]})
        assert out.json()["status"] == "completed" and out.json()["reward"] == 1.0
        assert client.get("http://" + server.url.split("/")[2] + "/").text.startswith("<!doctype html>")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(") ", 1)[1][:1] != "Z"


def _worker_pids(url: str) -> list[int]:
    return [w["pid"] for w in httpx.get(url + "/list_workers").json()]


def test_sigterm_drains_and_leaves_no_worker(tmp_path) -> None:
    server = start_server(tmp_path, [toy_task(lazy=False, workers=2)])
    deadline = time.monotonic() + 60
    while len(pids := _worker_pids(server.url)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(pids) == 2 and all(_alive(pid) for pid in pids)
    httpx.post(server.url + "/start_sample", json={"name": "toy", "index": 0})
    stop_server(server)
    assert server.process.returncode in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a clean stop
    assert "Application shutdown complete" in server.log.read_text()
    assert not any(_alive(pid) for pid in pids)


def test_a_killed_controller_s_workers_exit_and_the_next_start_removes_its_run_directory(tmp_path) -> None:
    scratch = tmp_path / "tmp"  # the controllers' temp dir, so other controllers' run directories stay out of it
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    server = start_server(tmp_path, [toy_task(lazy=False)], env=env)
    pids = _worker_pids(server.url)
    [run_dir] = scratch.glob(f"agentrl-ctl-{server.process.pid}-*")
    assert list(run_dir.glob("*.sock"))
    server.process.send_signal(signal.SIGKILL)
    server.process.wait()
    deadline = time.monotonic() + 10
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in pids)
    assert run_dir.is_dir()  # SIGKILL: nobody cleaned up
    live = scratch / f"agentrl-ctl-{os.getpid()}-live"  # a controller that still runs (this process)
    legacy = scratch / "agentrl-ctl-nopid123"  # no owner in the name: cannot tell, so kept
    live.mkdir()
    legacy.mkdir()
    (tmp_path / "next").mkdir()
    restarted = start_server(tmp_path / "next", [toy_task()], env=env)
    try:
        assert not run_dir.exists()
        assert live.is_dir() and legacy.is_dir()
        assert len(list(scratch.glob(f"agentrl-ctl-{restarted.process.pid}-*"))) == 1
    finally:
        stop_server(restarted)
    assert not list(scratch.glob(f"agentrl-ctl-{restarted.process.pid}-*"))  # a clean stop removes its own


def test_remote_env_plays_an_episode(server) -> None:
    from agentrl_envs.client import RemoteEnv

    env = RemoteEnv("toy-std", controller_url=server.url)
    messages, info = env.reset(options={"index": 3})
    assert messages[0]["role"] == "system" and {t["function"]["name"] for t in info["tools"]} == {"echo", "answer"}
    messages, reward, terminated, truncated, info = env.step(call("echo", '{"text": "x"}'))
    assert messages[0]["content"] == "x" and not terminated and info["status"] == "running"
    _, reward, terminated, truncated, info = env.step(call("answer", '{"value": 3}'))
    assert (reward, terminated, truncated, info["status"], info["infra_error"]) == (
        1.0,
        True,
        False,
        "completed",
        False,
    )
    env.close()


async def test_remote_env_async_episodes_run_concurrently(server) -> None:
    import asyncio

    from agentrl_envs.client import RemoteEnv

    async def episode(index: int) -> float:
        env = RemoteEnv("toy", controller_url=server.url)
        await env.areset(options={"index": index})
        _, reward, *_ = await env.astep(call("answer", f'{{"value": {index}}}'))
        await env.aclose()
        return reward

    assert await asyncio.gather(*(episode(i % 5) for i in range(16))) == [1.0] * 16
