"""Nothing outlives an episode: after 100 OS episodes no process, mount, cgroup, temp dir or container is left."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentrl_envs.sandboxes.base import SandboxBackend
from agentrl_envs.sandboxes.bwrap import TEMP_PREFIX
from agentrl_envs.sandboxes.cgroup import cgroup_leftovers
from agentrl_envs.sandboxes.options import SandboxOptions, open_sandboxes
from agentrl_envs.tasks.os.env import OSEnv
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


def _probe_processes() -> set[int]:
    """Host processes whose command line names the probe (each episode starts one in the background)."""
    pids = set()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if PROBE.encode() in cmdline.read_bytes():
                pids.add(int(cmdline.parent.name))
        except OSError:
            pass
    return pids


def _containers() -> set[str]:
    result = subprocess.run(
        ["docker", "ps", "-aq", "--filter", "label=agentrl.sandbox"], capture_output=True, text=True, check=False
    )
    return set(result.stdout.split()) if result.returncode == 0 else set()


def _leftovers() -> dict[str, set[object]]:
    """What sandboxes leave when they leak, by identity: earlier tests' sandboxes that are still being closed
    may vanish meanwhile, so the test compares what is new, not counts."""
    mounts = {line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines() if "agentrl" in line}
    return {
        "processes": set(_probe_processes()),
        "mounts": set(mounts),
        "cgroups": {str(path) for path in cgroup_leftovers()},
        "temp dirs": {path.name for path in Path("/tmp").glob(f"{TEMP_PREFIX}*")},
        "containers": set(_containers()),
    }


def _new_since(before: dict[str, set[object]]) -> dict[str, set[object]]:
    return {kind: found - before[kind] for kind, found in _leftovers().items() if found - before[kind]}


def _backend(name: str, request: pytest.FixtureRequest) -> SandboxBackend:
    """The OS task's default: the backend behind a warm pool (used sandboxes are closed in the background)."""
    if name == "docker":
        request.getfixturevalue("docker_engine")
    return open_sandboxes(SandboxOptions(backend=name, limits=TEST_LIMITS))


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
                assert _eventually(lambda: len(_probe_processes() - before["processes"]) == 1)
            answer = {"id": "a", "function": {"name": "answer_action", "arguments": '{"answer": "0"}'}}
            _, _, terminated, _, info = env.step({"role": "assistant", "tool_calls": [answer]})
            assert terminated and info["infra_error"] is False
    finally:
        env.close()
        backend.close()  # a backend passed in belongs to the caller (its pool closes the last sandboxes)
    assert _new_since(before) == {}
