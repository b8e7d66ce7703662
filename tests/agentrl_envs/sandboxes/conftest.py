"""Sandbox backends for tests: bwrap over the OS default rootfs, and Docker with the env_images (dockerd is
started for the session when none is running, and stopped afterwards)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrl_envs.sandboxes.base import Limits, SandboxBackend
from agentrl_envs.sandboxes.bwrap import BwrapBackend
from agentrl_envs.sandboxes.rootfs import ensure_rootfs
from agentrl_envs.tasks.os.images import docker_tag, ensure_docker_images, recipe

REPO = Path(__file__).resolve().parents[3]
TEST_LIMITS = Limits(memory_mb=256, pids=128, cpus=1.0, command_timeout_s=3.0, disk_mb=128)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[None]:
    """A running Docker engine with the OS images built (started here if needed, stopped at the end)."""
    started = subprocess.run([REPO / "scripts/dockerd.sh", "start"], capture_output=True, text=True, check=True)
    try:
        ensure_docker_images()  # all three, imported from the rootfs tarballs; reused when up to date
        yield
    finally:
        if started.stdout.strip() == "started":
            subprocess.run([REPO / "scripts/dockerd.sh", "stop"], check=False)


@pytest.fixture(scope="session")
def bwrap_backend() -> BwrapBackend:
    return BwrapBackend(lambda image: ensure_rootfs(recipe(image)), limits=TEST_LIMITS)


@pytest.fixture(scope="session")
def docker_backend(docker_engine: None) -> Iterator[SandboxBackend]:
    from agentrl_envs.sandboxes.docker import DockerBackend

    backend = DockerBackend(docker_tag, limits=TEST_LIMITS, pool_size=1)
    yield backend
    backend.close()


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    """Each sandbox backend in turn."""
    return request.getfixturevalue(f"{request.param}_backend")
