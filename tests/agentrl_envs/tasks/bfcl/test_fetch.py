from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from agentrl_envs.core.errors import DataError
from agentrl_envs.tasks.bfcl import fetch
from agentrl_envs.tasks.bfcl.fetch import BFCL_WHEEL, MEMBERS, ensure_bfcl, fetch_bfcl


@pytest.fixture
def wheel(bfcl_root: Path) -> Path:
    """The verified wheel the session's fetch left in the cache."""
    return bfcl_root.parent / BFCL_WHEEL.filename


def test_fetch_from_a_local_wheel_extracts_the_members_and_nothing_else(wheel: Path, tmp_path: Path) -> None:
    tree = fetch_bfcl(str(wheel), cache_dir=tmp_path)
    assert tree == tmp_path / "bfcl" / BFCL_WHEEL.version
    files = {str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file()}
    assert files == {*MEMBERS, "FETCHED.json"}
    assert json.loads((tree / "FETCHED.json").read_text())["sha256"] == BFCL_WHEEL.sha256
    left = [p.name for p in tree.parent.iterdir() if p.name.startswith(".")]
    assert left == [f".{BFCL_WHEEL.version}.lock"]  # the build lock stays; no staging folder or download
    assert fetch_bfcl(None, cache_dir=tmp_path) == tree  # cached: no network


def test_a_wheel_with_another_hash_is_refused_and_nothing_is_extracted(wheel: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.whl"
    data = bytearray(wheel.read_bytes())
    data[-1] ^= 1
    bad.write_bytes(bytes(data))
    with pytest.raises(DataError, match=re.escape(f"not the pinned {BFCL_WHEEL.sha256}")):
        fetch_bfcl(str(bad), cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache" / "bfcl" / BFCL_WHEEL.version).exists()


def test_offline_with_an_empty_cache_says_how_to_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRL_OFFLINE", "1")
    with pytest.raises(DataError, match="AGENTRL_OFFLINE=1 forbids fetching"):
        ensure_bfcl(tmp_path)


def test_a_half_extracted_tree_is_not_used(wheel: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    partial = tmp_path / "bfcl" / BFCL_WHEEL.version
    (partial / "bfcl_eval").mkdir(parents=True)
    shutil.copy(wheel, tmp_path / "bfcl" / BFCL_WHEEL.filename)
    monkeypatch.setattr(fetch, "_copy_or_download", lambda *a: pytest.fail("the cached wheel should be used"))
    tree = ensure_bfcl(tmp_path)
    assert (tree / "FETCHED.json").is_file() and (tree / MEMBERS[-1]).is_file()
