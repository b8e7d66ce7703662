"""Token and body-size checks (a controller with no tasks: nothing to start)."""

import pytest

from agentrl_controller.config import ControllerConfig
from tests.agentrl_controller.conftest import running

TOKEN = "s3cret-token-0123456789"


async def test_token_is_required_off_loopback() -> None:
    async with running(ControllerConfig(host="0.0.0.0", token=TOKEN)) as (_, client):
        for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": TOKEN}):
            for path in ("get_indices?name=toy", "/healthz", "/metrics", "list_sessions", "receive_heartbeat"):
                path = path if not path.startswith("/") else "http://testserver" + path
                response = await client.get(path, headers=headers)
                assert response.status_code == 401 and "bearer token" in response.json()["error"]
        response = await client.get("http://testserver/healthz", headers={"Authorization": f"Bearer {TOKEN}"})
        assert response.status_code == 200
        # The dashboard page is static (its data comes from the API, with the token from the URL fragment).
        assert (await client.get("http://testserver/")).status_code == 200


def test_non_loopback_bind_needs_a_token() -> None:
    with pytest.raises(ValueError, match="not a loopback address: set a bearer token"):
        ControllerConfig(host="0.0.0.0")
    assert ControllerConfig(host="::1").token is None


async def test_oversized_bodies_get_413() -> None:
    async with running(ControllerConfig(max_body_bytes=2048)) as (_, client):
        big = {"messages": [{"role": "assistant", "content": "x" * 5000}]}
        response = await client.post("interact", headers={"session_id": "1"}, json=big)
        assert response.status_code == 413 and "limit" in response.json()["error"]

        async def chunks():
            for _ in range(10):
                yield b"x" * 1000

        response = await client.post("interact", headers={"session_id": "1"}, content=chunks())
        assert response.status_code == 413


def test_serve_refuses_a_public_bind_without_a_token() -> None:
    import subprocess
    import sys

    command = [sys.executable, "-m", "agentrl_controller.cli", "serve", "--host", "0.0.0.0", "--port", "0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "not a loopback address: set a bearer token" in done.stderr
