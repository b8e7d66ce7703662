"""A sweep removes exactly what sandboxes of killed owners left behind, and never a live sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

from agentrl_envs.sandboxes import sweep
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


def test_a_sweep_that_cannot_see_a_live_sandbox_s_temp_dir_spares_it(
    bwrap_backend: SandboxBackend, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    # A controller started with its own TMPDIR sees none of this process's temp dirs; a sandbox whose cgroup
    # has processes is live however old it is (a dead owner's sandbox processes die with it).
    with bwrap_backend.open("default") as live:
        monkeypatch.setattr(sweep, "_GRACE_S", 0.0)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        sweep_leftovers()
        assert live.run_shell("echo alive").output == b"alive\n"
        assert live.exec(["true"]).exit_code == 0


def test_an_old_empty_cgroup_without_a_temp_dir_is_swept(monkeypatch: pytest.MonkeyPatch) -> None:
    group = Cgroup.create("0000sweepold", memory_mb=64, pids=16, cpus=0.5)
    try:
        monkeypatch.setattr(sweep, "_GRACE_S", 0.0)
        assert sweep_leftovers().cgroups >= 1
        assert not any(path.exists() for path in group.dirs.values())
    finally:
        group.destroy()
