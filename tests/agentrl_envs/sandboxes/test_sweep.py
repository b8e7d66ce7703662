"""A sweep removes exactly what sandboxes of killed owners left behind, and never a live sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from agentrl_envs.sandboxes.base import SandboxBackend
from agentrl_envs.sandboxes.cgroup import Cgroup
from agentrl_envs.sandboxes.sweep import sweep_leftovers
from agentrl_envs.tasks.os.images import docker_tag
from tests.agentrl_envs.sandboxes.conftest import TEST_LIMITS
from tests.agentrl_envs.sandboxes.test_cleanup import _leftovers

OWNER = textwrap.dedent(
    """
    import sys, time
    from agentrl_envs.sandboxes.options import SandboxOptions, open_sandboxes
    backend = open_sandboxes(SandboxOptions(backend=sys.argv[1], pool=None))
    box = backend.open("default")
    print("ready", flush=True)
    time.sleep(1000)
    """
)


@pytest.mark.parametrize("name", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def test_sweep_removes_leftovers_of_killed_owners_only(name: str, request: pytest.FixtureRequest) -> None:
    backend = _cold_backend(name, request)
    client = getattr(backend, "client", None)
    sweep_leftovers(docker_client=client)
    before = _leftovers()
    owner = subprocess.Popen([sys.executable, "-c", OWNER, name], stdout=subprocess.PIPE, env=os.environ.copy())
    assert owner.stdout is not None and owner.stdout.readline() == b"ready\n"
    os.kill(owner.pid, signal.SIGKILL)  # no chance to clean up
    owner.wait()
    with backend.open("default") as live:  # a live sandbox of this process survives the sweep
        left = _leftovers()
        kind = "containers" if name == "docker" else "temp dirs"
        assert left[kind] > before[kind]
        swept = sweep_leftovers(docker_client=client)
        assert (swept.containers if name == "docker" else swept.temp_dirs) == 1
        assert live.run_shell("echo alive").output == b"alive\n"
    backend.close()
    assert _leftovers() == before


def _cold_backend(name: str, request: pytest.FixtureRequest) -> SandboxBackend:
    """A backend without a warm pool, so the container count moves only with the sandboxes themselves."""
    if name == "bwrap":
        return request.getfixturevalue("bwrap_backend")
    request.getfixturevalue("docker_engine")
    from agentrl_envs.sandboxes.docker import DockerBackend

    return DockerBackend(docker_tag, limits=TEST_LIMITS)


def test_sweep_spares_a_sandbox_being_started_by_another_process() -> None:
    # A sandbox creates its cgroup first and its temp dir (with the owner file) just after: in between, a sweep
    # by another process (a controller starting) must not take the cgroup away.
    group = Cgroup.create("0000sweeptest", memory_mb=64, pids=16, cpus=0.5)
    try:
        sweep_leftovers()
        assert all(path.is_dir() for path in group.dirs.values())
    finally:
        group.destroy()
