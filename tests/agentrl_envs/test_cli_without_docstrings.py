"""The command-line entry points still start under ``python -OO``, which strips the docstrings they describe."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module", ["agentrl_envs.cli", "agentrl_envs.tasks.alfworld.prepare", "agentrl_envs.tasks.os.images"]
)
def test_help_under_OO(module: str):
    done = subprocess.run(
        [sys.executable, "-OO", "-m", module, "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage:" in done.stdout
