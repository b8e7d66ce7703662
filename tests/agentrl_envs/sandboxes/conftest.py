"""Sandbox backends for tests: bwrap over the OS default rootfs, and Docker with the env_images (dockerd is
started for the session when none is running, and stopped afterwards)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrl_envs.sandboxes.base import Limits, SandboxBackend
from agentrl_envs.sandboxes.bwrap import BwrapBackend
from agentrl_envs.sandboxes.pool import PoolSettings, SandboxPool
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

    backend = DockerBackend(docker_tag, limits=TEST_LIMITS)
    yield backend
    backend.close()


def warm_pool(backend: SandboxBackend, timeout_s: float = 60.0) -> SandboxPool:
    """A pool of ``backend`` holding one started ``default`` sandbox, idle: the next ``open`` leases it."""
    pool = SandboxPool(backend, PoolSettings(warm=1, maximum=4))
    pool.prewarm(["default"])
    deadline = time.monotonic() + timeout_s
    while (stats := pool.stats()["default"]).idle < 1 or stats.starting:
        if time.monotonic() > deadline:
            pool.close()
            raise AssertionError(f"the pool did not warm up within {timeout_s:g} s: {stats}")
        time.sleep(0.02)
    return pool


@pytest.fixture
def bwrap_pool_backend() -> Iterator[SandboxBackend]:
    """bwrap behind a warm pool: a sandbox started on the pool's thread and idle before the test leases it."""
    pool = warm_pool(BwrapBackend(lambda image: ensure_rootfs(recipe(image)), limits=TEST_LIMITS))
    yield pool
    pool.close()


@pytest.fixture
def docker_pool_backend(docker_engine: None) -> Iterator[SandboxBackend]:
    """Docker behind a warm pool (container and shell started before the test leases them)."""
    from agentrl_envs.sandboxes.docker import DockerBackend

    pool = warm_pool(DockerBackend(docker_tag, limits=TEST_LIMITS))
    yield pool
    pool.close()


@pytest.fixture(
    params=[
        "bwrap",
        "bwrap_pool",
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("docker_pool", marks=pytest.mark.docker),
    ]
)
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    """Each sandbox backend in turn, cold and behind a warm pool (what the OS task uses by default)."""
    return request.getfixturevalue(f"{request.param}_backend")
