"""Test-wide settings: the AgentBench data root is ../shared/agentbench unless AGENTRL_DATA_ROOT says otherwise."""

from __future__ import annotations

import os
import sys
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


_exit_status: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _exit_status.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the test process without interpreter finalization, keeping pytest's exit status.

    Native extensions loaded by the suite (TextWorld's engine among them) can crash the interpreter while it
    tears down after every test has passed, which would turn a green run's status into 139. Everything the
    tests start is stopped by their fixtures before this point; what remains is finalization only.
    """
    if _exit_status and os.environ.get("AGENTRL_TEST_FINALIZE") != "1":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_exit_status[0])
