"""The sandbox broker: worker processes share one pool (never more than its maximum), a killed worker's
sandboxes come back, a sandbox is fresh after a lease round trip, and a dead broker fails calls at once."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentrl_envs.core.errors import InfraError
from agentrl_envs.sandboxes.broker import start_broker, stop_broker
from agentrl_envs.sandboxes.options import SandboxOptions
from agentrl_envs.sandboxes.pool import PoolSettings
from agentrl_envs.sandboxes.sweep import sweep_leftovers
from tests.agentrl_controller.test_sandbox_pool import gone, sandboxes_of, wait_for
from tests.agentrl_envs.sandboxes.conftest import TEST_LIMITS, lease_round_trip

WORKER = textwrap.dedent(
    """
    import sys, time
    from agentrl_envs.sandboxes.base import Limits
    from agentrl_envs.sandboxes.broker_client import BrokerBackend
    from agentrl_envs.core.errors import InfraError
    backend = BrokerBackend(sys.argv[1], name=sys.argv[3], limits=Limits())
    try:
        boxes = [backend.open("default") for _ in range(int(sys.argv[2]))]
    except InfraError as e:
        print("error", e, flush=True)
        sys.exit(1)
    print("leased", *[box.run_shell("echo $$").output.decode().strip() for box in boxes], flush=True)
    time.sleep(1000)
    """
)
"""A worker process: leases ``argv[2]`` sandboxes from the broker at ``argv[1]`` and holds them."""


def lease_in_child(path: Path, count: int, backend: str) -> tuple[subprocess.Popen, str]:
    child = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(path), str(count), backend], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    return child, child.stdout.readline().strip()


def options(backend: str, **pool: object) -> SandboxOptions:
    return SandboxOptions(backend=backend, limits=TEST_LIMITS, pool=PoolSettings(images=["default"], **pool))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def test_worker_processes_share_one_pool_and_a_killed_ones_sandboxes_come_back(
    name: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if name == "docker":
        request.getfixturevalue("docker_engine")
    broker, backend = start_broker(options(name, warm=1, maximum=3, lease_timeout_s=2), str(tmp_path / "b.sock"))
    children: list[subprocess.Popen] = []
    try:
        first, first_said = lease_in_child(tmp_path / "b.sock", 2, name)
        second, second_said = lease_in_child(tmp_path / "b.sock", 1, name)
        children += [first, second]
        assert first_said.startswith("leased") and second_said.startswith("leased"), (first_said, second_said)
        stats = backend.stats()["default"]
        assert stats.leased == 3 and stats.idle + stats.leased + stats.starting + stats.closing <= 3
        if name == "bwrap":  # every sandbox is the broker's, none the workers'
            assert sandboxes_of({first.pid, second.pid})["temp dirs"] == 0
            assert sandboxes_of({broker.pid})["temp dirs"] <= 3
        # the pool is the task's: a third worker waits at the maximum and gets the pool's own error
        third, third_said = lease_in_child(tmp_path / "b.sock", 1, name)
        children.append(third)
        assert "all 3 are in use; raise the pool's maximum" in third_said
        # kill -9 a worker: the broker sees its connections end and gives its two sandboxes back (closed)
        os.kill(first.pid, signal.SIGKILL)
        wait_for(lambda: backend.stats()["default"].leased == 1, "the killed worker's sandboxes to come back")
        wait_for(lambda: backend.stats()["default"].closing == 0, "the given-back sandboxes to be closed")
        assert backend.stats()["default"].created >= 3
        with backend.open("default") as box:  # and a fresh one is leased again
            assert box.run_shell("echo ok").output == b"ok\n"
    finally:
        for child in children:
            child.kill()
            child.wait()
        stop_broker(broker)
    if name == "bwrap":
        assert sandboxes_of({broker.pid}) == {"temp dirs": 0, "cgroups": 0}


def test_a_given_back_sandbox_is_never_leased_again(tmp_path: Path) -> None:
    broker, backend = start_broker(options("bwrap", warm=1, maximum=2), str(tmp_path / "b.sock"))
    try:
        with backend.open("default") as box:
            first_shell = box.shell_pid
        lease_round_trip(backend)
        with backend.open("default") as box:
            assert box.shell_pid != first_shell
        wait_for(lambda: gone(first_shell), "the given-back sandbox's shell to be closed")
    finally:
        stop_broker(broker)


def test_a_dead_broker_fails_its_workers_at_once_with_a_clear_error(tmp_path: Path) -> None:
    broker, backend = start_broker(options("bwrap", warm=1, maximum=2), str(tmp_path / "b.sock"))
    try:
        box = backend.open("default")
        broker.kill()
        broker.wait()
        started = time.monotonic()
        with pytest.raises(InfraError, match=re.escape("closed the connection during run_shell")):
            box.run_shell("echo hello")
        with pytest.raises(InfraError, match=re.escape(f"No sandbox broker answers at {tmp_path / 'b.sock'}")):
            backend.open("default")
        assert not box.alive
        assert time.monotonic() - started < 5  # failed, not hung
        box.close()
    finally:
        stop_broker(broker)
        sweep_leftovers()  # what the killed broker left: its dead owner's temp dirs and cgroups
    assert sandboxes_of({broker.pid}) == {"temp dirs": 0, "cgroups": 0}
