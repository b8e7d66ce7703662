"""The cache dir: where generated assets go (``AGENTRL_CACHE_DIR``, default ``~/.cache/agentrl``).

A module of its own, below :mod:`agentrl_envs.core.data` and :mod:`agentrl_envs.data`, which both use it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["CACHE_DIR_ENV", "resolve_cache_dir"]

CACHE_DIR_ENV = "AGENTRL_CACHE_DIR"


def resolve_cache_dir() -> Path:
    """The directory for generated assets (created if missing)."""
    path = Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "agentrl").expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path
