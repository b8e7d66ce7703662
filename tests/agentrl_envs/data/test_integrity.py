"""A file that is not the pinned commit's is refused with a message naming it, and a refused or unreadable source
leaves nothing behind."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest

from agentrl_envs.core.errors import DataError, DataIntegrityError
from agentrl_envs.data import fetch, import_checkout

from .conftest import leftovers, rewrite_archive

VICTIM = "data/knowledgegraph/std.json"


def _flip_at(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0x01]) + data[offset + 1 :]


def test_a_flipped_byte_in_a_file_is_refused_naming_it(upstream_archive: Path, tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.tar.gz"
    rewrite_archive(upstream_archive, corrupt, lambda path, data: _flip_at(data, 100) if path == VICTIM else data)
    dest = tmp_path / "cache" / "root"
    with pytest.raises(DataIntegrityError, match=re.escape(f"{VICTIM} from {corrupt} is not the file")):
        fetch(source=corrupt, dest=dest, show_progress=False)
    assert leftovers(dest.parent) == []


def test_a_flipped_byte_in_the_archive_is_refused(upstream_archive: Path, tmp_path: Path) -> None:
    data = upstream_archive.read_bytes()
    corrupt = tmp_path / "corrupt.tar.gz"
    corrupt.write_bytes(_flip_at(data, len(data) // 2))
    dest = tmp_path / "cache" / "root"
    with pytest.raises(DataError, match="corrupt"):
        fetch(source=corrupt, dest=dest, show_progress=False)
    assert leftovers(dest.parent) == []


def test_a_checkout_at_another_version_is_refused(upstream_archive: Path, tmp_path: Path) -> None:
    with tarfile.open(upstream_archive) as tar:
        tar.extractall(tmp_path / "clone", filter="data")
    [checkout] = (tmp_path / "clone").iterdir()
    (checkout / "configs/tasks/os.yaml").write_text("changed: true\n")
    with pytest.raises(DataIntegrityError, match=re.escape("configs/tasks/os.yaml from")):
        import_checkout(checkout, dest=tmp_path / "cache" / "root")
    assert leftovers(tmp_path / "cache") == []


def test_an_archive_of_something_else_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.tar.gz"
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "README.md").write_text("hello\n")
    with tarfile.open(other, "w:gz") as tar:
        tar.add(tmp_path / "proj", arcname="proj")
    with pytest.raises(DataError, match="holds none of the files"):
        fetch(source=other, dest=tmp_path / "cache" / "root", show_progress=False)
