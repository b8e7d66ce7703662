"""Episode files live in private RAM-disk directories that a killed process does not leave behind for good."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from agentrl_envs.tasks.db import base
from agentrl_envs.tasks.db.backend import private_dir

HOLD_AN_EPISODE = """
import sys, time
import agentrl_envs
env = agentrl_envs.make("db", backend="sqlite")
env.reset(options={"index": 0})
print(env.unwrapped._db._dir, flush=True)
time.sleep(60)
"""


def test_directories_of_a_killed_process_are_removed_by_the_next_one(monkeypatch) -> None:
    child = subprocess.Popen([sys.executable, "-c", HOLD_AN_EPISODE], stdout=subprocess.PIPE, text=True)
    orphan = Path(child.stdout.readline().strip())
    assert orphan.is_dir() and f"-{child.pid}-" in orphan.name
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert orphan.is_dir()  # SIGKILL gives the owner no chance to clean up

    monkeypatch.setattr(base, "_swept", set())  # as in a fresh process
    mine = private_dir("db")
    try:
        assert not orphan.exists()
        assert mine.is_dir() and f"-{os.getpid()}-" in mine.name
    finally:
        mine.rmdir()


def test_directories_of_live_owners_are_kept(monkeypatch) -> None:
    monkeypatch.setattr(base, "_swept", set())
    first = private_dir("db")
    monkeypatch.setattr(base, "_swept", set())
    second = private_dir("db")
    try:
        assert first.is_dir() and second.is_dir()
    finally:
        first.rmdir()
        second.rmdir()
