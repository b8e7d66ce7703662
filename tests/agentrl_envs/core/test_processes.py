from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from agentrl_envs.core.processes import SharedServer, pid_alive


class FakeServer:
    def __init__(self) -> None:
        self.running = True
        self.stops = 0

    def stop(self) -> None:
        self.running = False
        self.stops += 1


def test_one_server_is_shared_until_its_last_user_releases_it() -> None:
    started: list[FakeServer] = []
    shared = SharedServer(lambda: started.append(FakeServer()) or started[-1])
    first, second = shared.acquire(), shared.acquire()
    assert first is second and len(started) == 1
    shared.release()
    assert first.running
    shared.release()
    assert not first.running and first.stops == 1
    assert shared.acquire() is not first and len(started) == 2
    shared.stop()


def test_a_dead_server_is_replaced_on_acquire() -> None:
    shared = SharedServer(FakeServer)
    first = shared.acquire()
    first.running = False  # crashed
    assert shared.acquire() is not first
    shared.stop()


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        time.sleep(0.01)  # exited, not yet reaped
    assert not pid_alive(child.pid)
    child.wait()
