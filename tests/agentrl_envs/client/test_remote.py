"""RemoteEnv against scripted controller answers (httpx.MockTransport): shaping, retries, errors."""

import json
import re

import gymnasium as gym
import httpx
import pytest

from agentrl_envs.client import RemoteEnv
from agentrl_envs.core import EnvError, InfraError

URL = "http://controller.test/api"
TOOLS = [{"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}}]


def scripted(handler):
    return RemoteEnv("db", controller_url=URL, transport=httpx.MockTransport(handler), backoff_s=0.0)


def controller(log, *, fail_first=0, status_first=None):
    state = {"calls": 0}

    def handler(request: httpx.Request) -> httpx.Response:
        state["calls"] += 1
        path = request.url.path.removeprefix("/api/")
        log.append((path, request.headers.get("session_id"), request.content))
        if state["calls"] <= fail_first:
            raise httpx.ConnectError("refused", request=request)
        if status_first and state["calls"] == 1:
            return httpx.Response(status_first, json={"error": "queue full"})
        if path == "get_indices":
            return httpx.Response(200, json=[0, 1, 2])
        if path == "start_sample":
            first = {"messages": [{"role": "user", "content": "go"}], "tools": TOOLS, "status": "running"}
            return httpx.Response(200, json={**first, "finish": False, "reward": 0}, headers={"session_id": "42"})
        if path == "interact":
            done = {"messages": [], "status": "completed", "finish": True, "reward": 1.0, "metrics": {"score": 1.0}}
            return httpx.Response(200, json=done)
        return httpx.Response(200, json={"session_id": 42, "status": "cancelled"})

    return handler


def test_episode_shapes_like_the_local_env() -> None:
    log = []
    env = scripted(controller(log))
    messages, info = env.reset(options={"index": 1})
    assert messages == [{"role": "user", "content": "go"}]
    assert info["tools"] == TOOLS and info["index"] == 1 and info["session_id"] == 42 and info["status"] == "running"
    assert json.loads(log[-1][2]) == {"name": "dbbench-std", "index": 1, "custom_task": None}
    action = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "function": {"name": "noop"}}]}
    _, reward, terminated, truncated, info = env.step(action)
    assert (reward, terminated, truncated, info["status"], info["score"]) == (1.0, True, False, "completed", 1.0)
    sent = json.loads(log[-1][2])["messages"][0]
    assert log[-1][1] == "42" and sent["tool_calls"][0]["function"]["name"] == "noop"
    with pytest.raises(EnvError, match=re.escape("The episode has ended with status 'completed'")):
        env.step("again")
    env.close()
    assert [entry[0] for entry in log] == ["start_sample", "interact"]  # nothing to cancel after a finish


def test_random_index_comes_from_the_controller_and_reset_cancels_the_open_episode() -> None:
    log = []
    env = scripted(controller(log))
    env.reset(seed=3)
    env.reset(seed=3)
    assert [entry[0] for entry in log] == ["get_indices", "start_sample", "cancel", "start_sample"]
    assert log[2][1] == "42"


def test_connection_refused_is_retried_then_reported() -> None:
    log = []
    env = scripted(controller(log, fail_first=2))
    env.reset(options={"index": 0})
    assert [entry[0] for entry in log] == ["start_sample"] * 3
    env = scripted(controller([], fail_first=99))
    with pytest.raises(InfraError, match="Controller at http://controller.test/api/ failed: ConnectError"):
        env.reset(options={"index": 0})


def test_overload_429_is_retried_and_4xx_is_an_env_error() -> None:
    log = []
    env = scripted(controller(log, status_first=429))
    env.reset(options={"index": 0})
    assert [entry[0] for entry in log] == ["start_sample", "start_sample"]
    env = scripted(controller([], status_first=404))
    with pytest.raises(EnvError, match="Controller answered 404 to /api/start_sample: queue full"):
        env.reset(options={"index": 0})


def test_interact_cut_off_is_not_resent() -> None:
    log = []
    inner = controller(log)

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("interact"):
            log.append(("interact", None, b""))
            raise httpx.ReadError("connection reset", request=request)
        return inner(request)

    env = scripted(handler)
    env.reset(options={"index": 0})
    with pytest.raises(InfraError, match="ReadError"):
        env.step("hello")
    assert [entry[0] for entry in log].count("interact") == 1


def test_gym_make_with_controller_url_gives_a_remote_env() -> None:
    env = gym.make("AgentBench/DB-v0", controller_url=URL)
    assert isinstance(env.unwrapped, RemoteEnv) and env.unwrapped.name == "dbbench-std"
    env = gym.make("AgentBench/DB-v0", controller_url=URL, split="dev")
    assert env.unwrapped.name == "dbbench-dev"
    with pytest.raises(EnvError, match="cannot be set through a controller"):
        gym.make("AgentBench/DB-v0", controller_url=URL, backend="sqlite")


def test_a_controller_url_without_api_gets_a_did_you_mean() -> None:
    """`--controller http://host:port` (no /api) reaches the controller's root, where every route is a 404."""

    def root_only(request: httpx.Request) -> httpx.Response:
        if request.url.path.startswith("/api/"):
            return httpx.Response(200, json=[0, 1])
        return httpx.Response(404, json={"error": "Not Found"})

    env = RemoteEnv("db", controller_url="http://127.0.0.1:5020", transport=httpx.MockTransport(root_only))
    with pytest.raises(EnvError, match=re.escape("Did you mean --controller http://127.0.0.1:5020/api?")):
        env.num_samples()
    right = RemoteEnv("db", controller_url="http://127.0.0.1:5020/api", transport=httpx.MockTransport(root_only))
    assert right.num_samples() == 2
