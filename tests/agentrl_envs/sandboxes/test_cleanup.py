"""Nothing outlives an episode: after 100 OS episodes no process, mount, cgroup, temp dir or container is left."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentrl_envs.sandboxes.base import SandboxBackend
from agentrl_envs.sandboxes.bwrap import TEMP_PREFIX, BwrapBackend
from agentrl_envs.sandboxes.cgroup import cgroup_leftovers
from agentrl_envs.sandboxes.rootfs import ensure_rootfs
from agentrl_envs.tasks.os.env import OSEnv
from agentrl_envs.tasks.os.images import docker_tag, recipe
from tests.agentrl_envs.sandboxes.conftest import TEST_LIMITS

PROBE = "agentrl-leak-probe"
EPISODES = 100


def _eventually(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Whether ``condition`` holds within ``timeout_s`` (polled)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _probe_processes() -> int:
    """Host processes whose command line names the probe (each episode starts one in the background)."""
    count = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            count += PROBE.encode() in cmdline.read_bytes()
        except OSError:
            pass
    return count


def _containers() -> int:
    result = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=agentrl.sandbox"], capture_output=True, text=True, check=False
    )
    return len(result.stdout.split()) if result.returncode == 0 else 0


def _leftovers() -> dict[str, int]:
    mounts = sum("agentrl" in line for line in Path("/proc/self/mountinfo").read_text().splitlines())
    return {
        "processes": _probe_processes(),
        "mounts": mounts,
        "cgroups": len(cgroup_leftovers()),
        "temp dirs": len(list(Path("/tmp").glob(f"{TEMP_PREFIX}*"))),
        "containers": _containers(),
    }


def _backend(name: str, request: pytest.FixtureRequest) -> SandboxBackend:
    if name == "bwrap":
        return BwrapBackend(lambda image: ensure_rootfs(recipe(image)), limits=TEST_LIMITS)
    request.getfixturevalue("docker_engine")
    from agentrl_envs.sandboxes.docker import DockerBackend

    return DockerBackend(docker_tag, limits=TEST_LIMITS, pool_size=2)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def test_hundred_episodes_leave_nothing_behind(name: str, request: pytest.FixtureRequest) -> None:
    before = _leftovers()
    backend = _backend(name, request)
    env = OSEnv(split="test", backend=backend)
    try:
        for episode in range(EPISODES):
            env.reset(options={"index": episode % 10})
            script = f"(exec -a {PROBE} sleep 1000) & cd /tmp && touch left-over"
            call = {"id": "c", "function": {"name": "bash_action", "arguments": json.dumps({"script": script})}}
            env.step({"role": "assistant", "tool_calls": [call]})
            if episode == 0:
                # The probe is visible while it runs (once the background subshell has exec'd: not at once on a busy
                # machine, hence the wait).
                assert _eventually(lambda: _probe_processes() == before["processes"] + 1)
            answer = {"id": "a", "function": {"name": "answer_action", "arguments": '{"answer": "0"}'}}
            _, _, terminated, _, info = env.step({"role": "assistant", "tool_calls": [answer]})
            assert terminated and info["infra_error"] is False
    finally:
        env.close()
        backend.close()  # a backend passed in belongs to the caller (a docker one holds a warm pool)
    assert _leftovers() == before
