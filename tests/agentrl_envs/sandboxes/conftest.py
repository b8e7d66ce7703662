"""Sandbox backends for tests: bwrap over the OS default rootfs, and Docker with the env_images (dockerd is
started for the session when none is running, and stopped afterwards); each cold, behind a warm pool, and
leased from a sandbox broker process after a lease round trip."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrl_envs.sandboxes.base import Limits, SandboxBackend
from agentrl_envs.sandboxes.broker import start_broker, stop_broker
from agentrl_envs.sandboxes.bwrap import BwrapBackend
from agentrl_envs.sandboxes.options import SandboxOptions
from agentrl_envs.sandboxes.pool import PoolSettings, SandboxPool
from agentrl_envs.sandboxes.rootfs import ensure_rootfs
from agentrl_envs.tasks.os.images import docker_tag, ensure_docker_images, recipe

REPO = Path(__file__).resolve().parents[3]
TEST_LIMITS = Limits(memory_mb=256, pids=128, cpus=1.0, command_timeout_s=3.0, disk_mb=128)
BROKER_POOL = PoolSettings(warm=1, maximum=4, images=["default"])


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


def lease_round_trip(backend: SandboxBackend) -> None:
    """One episode through ``backend``: lease, leave a file, a variable, a background process, give back. The next
    lease must see none of it (a sandbox is never reused across episodes)."""
    with backend.open("default") as box:
        box.run_shell("export LEFT=behind; echo dirty > /root/left-behind; (sleep 1234 &)")
    with backend.open("default") as box:
        seen = box.run_shell("echo $LEFT; ls /root; pgrep -f 'sleep 1234' | wc -l")
    assert seen.output == b"\n0\n", f"a sandbox leased after a round trip is not fresh: {seen.output!r}"


def _broker_backend(options: SandboxOptions, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxBackend]:
    process, backend = start_broker(options, str(tmp_path_factory.mktemp("broker") / "b.sock"))
    try:
        yield backend
    finally:
        stop_broker(process)


@pytest.fixture(scope="session")
def bwrap_broker_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxBackend]:
    options = SandboxOptions(
        backend="bwrap", limits=TEST_LIMITS, pool=PoolSettings(warm=1, maximum=4, images=["default"])
    )
    yield from _broker_backend(options, tmp_path_factory)


@pytest.fixture(scope="session")
def docker_broker_session(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SandboxBackend]:
    options = SandboxOptions(
        backend="docker", limits=TEST_LIMITS, pool=PoolSettings(warm=1, maximum=4, images=["default"])
    )
    yield from _broker_backend(options, tmp_path_factory)


@pytest.fixture
def bwrap_broker_backend(bwrap_broker_session: SandboxBackend) -> SandboxBackend:
    """bwrap leased from a broker process, after one lease round trip through it."""
    lease_round_trip(bwrap_broker_session)
    return bwrap_broker_session


@pytest.fixture
def docker_broker_backend(docker_broker_session: SandboxBackend) -> SandboxBackend:
    """Docker leased from a broker process, after one lease round trip through it."""
    lease_round_trip(docker_broker_session)
    return docker_broker_session


@pytest.fixture(
    params=[
        "bwrap",
        "bwrap_pool",
        "bwrap_broker",
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("docker_pool", marks=pytest.mark.docker),
        pytest.param("docker_broker", marks=pytest.mark.docker),
    ]
)
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    """Each sandbox backend in turn: cold, behind a warm pool (the OS task's default), and leased from a broker."""
    return request.getfixturevalue(f"{request.param}_backend")
