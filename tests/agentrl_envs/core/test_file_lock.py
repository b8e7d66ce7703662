"""``file_lock``: one holder at a time across processes, and a dead holder's lock is free again."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from agentrl_envs.core.file_lock import file_lock

_TAKE = "import sys; from pathlib import Path; from agentrl_envs.core.file_lock import file_lock\n"


def _taker(lock: Path, then: str) -> subprocess.Popen[bytes]:
    code = _TAKE + f"with file_lock(Path({str(lock)!r})):\n    print('held', flush=True)\n    {then}\n"
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)


def test_a_second_process_waits_until_the_holder_lets_go(tmp_path: Path) -> None:
    lock = tmp_path / "sub" / "build.lock"
    with file_lock(lock):
        other = _taker(lock, "pass")
        time.sleep(1.0)
        assert other.poll() is None  # still waiting for the lock
    assert other.stdout is not None and other.stdout.readline() == b"held\n"
    assert other.wait(timeout=30) == 0


def test_a_killed_holder_leaves_no_stuck_lock(tmp_path: Path) -> None:
    lock = tmp_path / "build.lock"
    holder = _taker(lock, "import time; time.sleep(600)")
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    holder.kill()
    holder.wait()
    with file_lock(lock):  # returns at once: the kernel dropped the dead holder's lock
        pass
