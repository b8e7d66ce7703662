"""Run directories: named by their owner's pid, and swept at the next start once that owner is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from agentrl_controller.rundir import make_run_dir, sweep_run_dirs


def test_only_directories_of_owners_that_are_gone_are_removed(tmp_path: Path) -> None:
    zombie = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(zombie.pid, signal.SIGKILL)
        os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)  # dead but not reaped: a zombie
        mine = make_run_dir(tmp_path)
        assert mine.name.startswith(f"agentrl-ctl-{os.getpid()}-") and mine.is_dir()
        dead = tmp_path / f"agentrl-ctl-{zombie.pid}-abc"
        (dead / "sub").mkdir(parents=True)
        (dead / "w0-0.log").write_text("log")
        legacy = tmp_path / "agentrl-ctl-k2j4h5g6"  # no pid in the name
        legacy.mkdir()
        a_file = tmp_path / f"agentrl-ctl-{zombie.pid}-file"
        a_file.write_text("not a run directory")
        link = tmp_path / f"agentrl-ctl-{zombie.pid}-link"
        link.symlink_to(legacy)
        assert sweep_run_dirs(tmp_path) == [dead]
    finally:
        zombie.wait()
    assert not dead.exists()
    assert mine.is_dir() and legacy.is_dir() and a_file.is_file() and link.is_symlink()
