"""Resolution order: ``data_root=``, then ``AGENTRL_DATA_ROOT``, then the cache, fetched on first use with a
one-line notice, or refused with the fetch command named when ``AGENTRL_OFFLINE=1``."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from agentrl_envs.core.data import resolve_data_root
from agentrl_envs.core.errors import DataError
from agentrl_envs.data import PINNED_COMMIT


@pytest.fixture
def empty_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AGENTRL_DATA_ROOT and an empty cache dir."""
    monkeypatch.delenv("AGENTRL_DATA_ROOT", raising=False)
    monkeypatch.setenv("AGENTRL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_offline_with_an_empty_cache_names_the_fetch_command(
    empty_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTRL_OFFLINE", "1")
    with pytest.raises(DataError, match=r"AGENTRL_OFFLINE forbids.*`agentrl-envs data fetch`.*--data-root"):
        resolve_data_root()
    assert not (empty_cache / "agentbench" / PINNED_COMMIT).exists()


def test_first_use_fetches_into_the_cache_with_a_notice(
    empty_cache: Path,
    upstream_archive: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("AGENTRL_OFFLINE", raising=False)
    monkeypatch.setenv("AGENTRL_DATA_URL", str(upstream_archive))
    with caplog.at_level(logging.WARNING, logger="agentrl_envs.data.fetch"):
        root = resolve_data_root()
    assert root == empty_cache / "agentbench" / PINNED_COMMIT
    [notice] = [r.getMessage() for r in caplog.records]
    assert notice.startswith(f"agentrl-envs: fetching AgentBench {PINNED_COMMIT[:7]} from {upstream_archive}")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agentrl_envs.data.fetch"):
        assert resolve_data_root() == root  # the second use finds it
    assert caplog.records == []


def test_argument_then_environment_then_cache(
    empty_cache: Path, built_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("AGENTRL_OFFLINE", "1")
    monkeypatch.setenv("AGENTRL_DATA_ROOT", str(built_root))
    assert resolve_data_root() == built_root.resolve()
    with pytest.raises(DataError, match=r"from the data_root argument \(--data-root\)"):
        resolve_data_root(tmp_path / "elsewhere")
