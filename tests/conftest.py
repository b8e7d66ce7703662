"""Test-wide settings.

The AgentBench data root is built the way a user's machine builds it, by ``agentrl-envs data fetch``, from the local
mirror of the pinned commit's archive (``../shared/upstream``) into the cache, unless ``AGENTRL_DATA_ROOT`` names
one. ``../shared/agentbench`` (the hand-made reference root) is read only by the tests that compare with it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REFERENCE_ROOT = REPO.parent / "shared" / "agentbench"
"""The data root made by hand from the archive: what a built root is compared with."""
UPSTREAM_ARCHIVE = REPO.parent / "shared" / "upstream" / "AgentBench-578c5e9.tar.gz"
"""The local mirror of GitHub's tarball of the pinned commit (three blobs absent, see its README)."""

if UPSTREAM_ARCHIVE.is_file():
    # A first use in a subprocess with another cache dir fetches from the mirror, never from GitHub.
    os.environ.setdefault("AGENTRL_DATA_URL", str(UPSTREAM_ARCHIVE))


@pytest.fixture(autouse=True, scope="session")
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Keep generated assets out of the user's cache unless AGENTRL_CACHE_DIR is set (CI sets it to persist)."""
    if not os.environ.get("AGENTRL_CACHE_DIR"):
        os.environ["AGENTRL_CACHE_DIR"] = str(tmp_path_factory.mktemp("agentrl-cache"))


@pytest.fixture(autouse=True, scope="session")
def data_root(_cache_dir: None) -> Path:
    """The AgentBench data root the tests read: ``agentrl-envs data fetch`` into the cache (a no-op when warm)."""
    if not os.environ.get("AGENTRL_DATA_ROOT"):
        from agentrl_envs.data import fetch

        os.environ["AGENTRL_DATA_ROOT"] = str(fetch(show_progress=False))
    path = Path(os.environ["AGENTRL_DATA_ROOT"])
    assert (path / "prompts.json").is_file(), f"AgentBench data root not found at {path}"
    return path


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
