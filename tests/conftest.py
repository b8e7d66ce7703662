"""Test-wide settings: the AgentBench data root is ../shared/agentbench unless AGENTRL_DATA_ROOT says otherwise."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA_ROOT = REPO.parent / "shared" / "agentbench"

os.environ.setdefault("AGENTRL_DATA_ROOT", str(DEFAULT_DATA_ROOT))


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The AgentBench data root the tests read."""
    path = Path(os.environ["AGENTRL_DATA_ROOT"])
    assert (path / "prompts.json").is_file(), f"AgentBench data root not found at {path}"
    return path


@pytest.fixture(autouse=True, scope="session")
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep generated assets out of the user's cache unless AGENTRL_CACHE_DIR is set (CI sets it to persist)."""
    if not os.environ.get("AGENTRL_CACHE_DIR"):
        os.environ["AGENTRL_CACHE_DIR"] = str(tmp_path_factory.mktemp("agentrl-cache"))
