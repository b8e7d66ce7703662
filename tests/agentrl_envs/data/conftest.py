"""Fixtures of the data-root tests: the archive mirror, the hand-made reference root, and a root built from the
archive by ``agentrl-envs data fetch`` (once per session, in a temporary folder)."""

from __future__ import annotations

import functools
import gzip
import io
import tarfile
import threading
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentrl_envs.data import fetch
from tests.conftest import REFERENCE_ROOT, UPSTREAM_ARCHIVE


@pytest.fixture(scope="session")
def upstream_archive() -> Path:
    """The local mirror of the pinned commit's archive."""
    if not UPSTREAM_ARCHIVE.is_file():
        pytest.skip(f"the archive mirror {UPSTREAM_ARCHIVE} is not on this machine")
    return UPSTREAM_ARCHIVE


@pytest.fixture(scope="session")
def reference_root() -> Path:
    """``../shared/agentbench``: the data root made by hand from the archive."""
    if not (REFERENCE_ROOT / "prompts.json").is_file():
        pytest.skip(f"the reference data root {REFERENCE_ROOT} is not on this machine")
    return REFERENCE_ROOT


@pytest.fixture(scope="session")
def built_root(upstream_archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data root built from the archive mirror by the fetch code path."""
    return fetch(source=upstream_archive, dest=tmp_path_factory.mktemp("built") / "root", show_progress=False)


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the stdlib's signature
        pass


@pytest.fixture
def mirror(upstream_archive: Path) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 serving the archive's folder; yields the archive's URL."""
    handler = functools.partial(_QuietHandler, directory=str(upstream_archive.parent))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{upstream_archive.name}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def rewrite_archive(source: Path, target: Path, change: Callable[[str, bytes], bytes]) -> None:
    """Copy a .tar.gz, passing every regular file's contents through ``change(path_in_repo, data)``."""
    out = io.BytesIO()
    with tarfile.open(source, "r:gz") as tar, tarfile.open(fileobj=out, mode="w") as new:
        for member in tar:
            if not member.isfile():
                new.addfile(member)
                continue
            extracted = tar.extractfile(member)
            assert extracted is not None
            data = change(member.name.split("/", 1)[1], extracted.read())
            member.size = len(data)
            new.addfile(member, io.BytesIO(data))
    target.write_bytes(gzip.compress(out.getvalue()))


def leftovers(folder: Path) -> list[str]:
    """What a folder holds besides lock files (a failed build must leave nothing else)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.exists() else []
