"""Upstream AgentRL's published client and worker, installed from PyPI into their own venv under the cache dir.

They must not share our environment (their pins differ, and a compatibility test must run the real thing), so
the venv lives at ``$AGENTRL_CACHE_DIR/upstream-agentrl/<versions>/`` and is built once with ``uv``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["EVAL_VERSION", "WORKER_VERSION", "upstream_venv"]

EVAL_VERSION = "0.1.2"
WORKER_VERSION = "0.4.0"


def _cache_dir() -> Path:
    return Path(os.environ.get("AGENTRL_CACHE_DIR") or Path.home() / ".cache" / "agentrl")


def upstream_venv() -> Path:
    """The venv's directory (``bin/agentrl-eval``, ``bin/python -m agentrl.worker``); built on first use.

    Raises:
        RuntimeError: If ``uv`` is missing or the install fails (the message has uv's output).
    """
    root = _cache_dir() / "upstream-agentrl" / f"eval-{EVAL_VERSION}-worker-{WORKER_VERSION}"
    ready = root / ".ready"
    if ready.exists():
        return root / "venv"
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test runs build it once
        if ready.exists():
            return root / "venv"
        uv = shutil.which("uv")
        if uv is None:
            raise RuntimeError(
                "uv is needed to install upstream agentrl-eval/agentrl-worker; run scripts/bootstrap.sh."
            )
        venv = root / "venv"
        shutil.rmtree(venv, ignore_errors=True)
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        packages = [f"agentrl-eval=={EVAL_VERSION}", f"agentrl-worker=={WORKER_VERSION}"]
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")}
        for command in (
            [uv, "venv", "--quiet", "--python", python, str(venv)],
            [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), *packages],
        ):
            done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
        ready.touch()
        return venv
