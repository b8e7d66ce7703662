"""Fetching by URL: from a local HTTP server standing in for GitHub, through transport failures (retried), and
from a URL with no archive (a clear error, nothing left)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from agentrl_envs.core.errors import DataError
from agentrl_envs.data import fetch, read_info

from .conftest import leftovers


def test_fetch_by_url_builds_the_root(mirror: str, built_root: Path, tmp_path: Path) -> None:
    root = fetch(source=mirror, dest=tmp_path / "cache" / "root", show_progress=True)
    info = read_info(root)
    assert info is not None and info.source == mirror
    assert info.files == read_info(built_root).files  # type: ignore[union-attr]
    assert leftovers(tmp_path / "cache") == ["root"]  # the download's temporary folder is gone


def test_transport_errors_are_retried(upstream_archive: Path, tmp_path: Path) -> None:
    calls = []

    def flaky(request: httpx.Request) -> httpx.Response:
        calls.append(request.url)
        if len(calls) < 3:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, content=upstream_archive.read_bytes())

    url = "https://mirror.invalid/AgentBench.tar.gz"
    root = fetch(source=url, dest=tmp_path / "root", show_progress=False, transport=httpx.MockTransport(flaky))
    assert len(calls) == 3 and (root / "prompts.json").is_file()


def test_a_url_without_an_archive_is_a_clear_error(tmp_path: Path) -> None:
    url = "https://mirror.invalid/nothing.tar.gz"
    transport = httpx.MockTransport(lambda request: httpx.Response(404))
    with pytest.raises(DataError, match=r"answered HTTP 404 Not Found: no archive there"):
        fetch(source=url, dest=tmp_path / "cache" / "root", show_progress=False, transport=transport)
    assert leftovers(tmp_path / "cache") == []


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retries without sleeping."""
    monkeypatch.setattr("agentrl_envs.data.download.time.sleep", lambda seconds: None)


def test_a_body_cut_on_every_try_fails_cleanly(tmp_path: Path) -> None:
    class Cut(httpx.SyncByteStream):
        def __iter__(self):  # noqa: ANN204 - the stream protocol
            yield b"\x1f\x8b partial"
            raise httpx.ReadError("connection reset")

    transport = httpx.MockTransport(lambda request: httpx.Response(200, stream=Cut()))
    url = "https://mirror.invalid/AgentBench.tar.gz"
    with pytest.raises(DataError, match=r"failed 4 times \(last: connection reset\)"):
        fetch(source=url, dest=tmp_path / "cache" / "root", show_progress=False, transport=transport)
    assert leftovers(tmp_path / "cache") == []
