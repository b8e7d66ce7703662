"""On a clean machine (an empty cache, no AGENTRL_DATA_ROOT, no ../shared, only a local mirror of the archive
standing in for GitHub), the installed envs wheel fetches its data root on first use and plays a DB episode to
the end."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

SCRIPT = """
import gymnasium as gym
import agentrl_envs
from agentrl_envs.core.oracle import load_oracle

env = gym.make("AgentBench/DB-v0")
oracle = load_oracle("db")
observation, info = env.reset(options={"index": 0})
oracle.begin(0)
terminated = truncated = False
while not (terminated or truncated):
    observation, reward, terminated, truncated, info = env.step(oracle.act(observation))
print("RESULT", reward, info["status"], agentrl_envs.__file__)
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_wheel_fetches_its_data_and_plays_the_oracle(mirror: str, tmp_path: Path) -> None:
    uv = shutil.which("uv")
    assert uv is not None, "uv builds the wheel"
    dist = tmp_path / "dist"
    subprocess.run([uv, "build", "--package", "agentrl-envs", "--wheel", "-o", str(dist)], cwd=REPO, check=True)
    [wheel] = dist.glob("agentrl_envs-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run([uv, "pip", "install", "--quiet", "--python", str(python), str(wheel)], check=True)
    home = tmp_path / "home"  # no ../shared beside it, an empty cache inside it
    home.mkdir()
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTRL_", "PYTHON", "VIRTUAL_ENV"))}
    environment.update(HOME=str(home), AGENTRL_CACHE_DIR=str(home / "cache"), AGENTRL_DATA_URL=mirror)
    done = subprocess.run(
        [str(python), "-c", SCRIPT], cwd=home, env=environment, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"fetching AgentBench 578c5e9 from {mirror}" in done.stderr
    result = done.stdout.split("RESULT ", 1)[1].split()
    assert result[:2] == ["1.0", "completed"]
    assert result[2].startswith(str(venv))  # the installed wheel, not the repository's sources
    assert (home / "cache" / "agentbench" / "578c5e9f706fc2dd96188ca6c8cf9095ca0c6528" / "prompts.json").is_file()
