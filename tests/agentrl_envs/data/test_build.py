"""A data root built from the archive mirror holds the reference root's 133 data and config files byte for byte,
records its commit, source and what the source lacked, and a second fetch leaves it alone."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import gymnasium as gym
import pytest

import agentrl_envs  # noqa: F401 - registers the env ids
from agentrl_envs.core.errors import DataError
from agentrl_envs.data import PINNED_COMMIT, fetch, import_checkout, inspect, read_info

NOT_DATA = {"README.md", "prompts.json"}
"""Files of the reference root written by hand (the rest are upstream's files)."""
OURS = {"prompts.json", "agentrl-data.json"}
"""Files a built root has beside upstream's."""


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_built_root_holds_the_reference_files_byte_for_byte(built_root: Path, reference_root: Path) -> None:
    reference = {path: data for path, data in _files(reference_root).items() if path not in NOT_DATA}
    built = {path: data for path, data in _files(built_root).items() if path not in OURS}
    assert len(reference) == 133
    assert sorted(built) == sorted(reference)
    assert [path for path in reference if built[path] != reference[path]] == []
    moved = [path for path in built if path.startswith(("data/knowledgegraph/ontology/", "data/alfworld/prompts/"))]
    assert len(moved) == 11  # the files upstream keeps under src/


def test_metadata_records_commit_source_and_what_the_source_lacked(built_root: Path, upstream_archive: Path) -> None:
    info = read_info(built_root)
    assert info is not None
    assert info.commit == PINNED_COMMIT and info.source == str(upstream_archive)
    assert info.missing == {
        "data/dbbench/db_out_new.jsonl": "data/dbbench/db_out_new.jsonl",
        "data/dbbench/extend_std.json": "data/dbbench/extend_std.json",
    }
    assert len(info.files) == 133
    assert info.prompts_tasks == ["alfworld", "dbbench", "kg", "os", "webshop"]


def test_status_names_the_split_the_missing_file_disables(built_root: Path) -> None:
    unusable = {(s.task, s.split): s.missing for s in inspect(built_root).splits if not s.usable}
    assert unusable == {("db", "train"): ("data/dbbench/db_out_new.jsonl",)}


def test_the_split_that_needs_an_absent_file_says_so(built_root: Path) -> None:
    with pytest.raises(DataError, match=r"lacks upstream's data/dbbench/db_out_new\.jsonl.*agentrl-envs data fetch"):
        gym.make("AgentBench/DB-v0", split="train", data_root=str(built_root))


def test_a_second_fetch_is_a_no_op(built_root: Path, upstream_archive: Path) -> None:
    stamp = (built_root / "agentrl-data.json").stat().st_mtime_ns
    assert fetch(source=upstream_archive, dest=built_root, show_progress=False) == built_root
    assert (built_root / "agentrl-data.json").stat().st_mtime_ns == stamp


def test_import_of_a_checkout_builds_the_same_root(built_root: Path, upstream_archive: Path, tmp_path: Path) -> None:
    with tarfile.open(upstream_archive) as tar:
        tar.extractall(tmp_path / "clone", filter="data")
    [checkout] = (tmp_path / "clone").iterdir()
    root = import_checkout(checkout, dest=tmp_path / "root")
    assert _files(root).keys() == _files(built_root).keys()
    assert (
        json.loads((root / "prompts.json").read_text())["tasks"]
        == json.loads((built_root / "prompts.json").read_text())["tasks"]
    )
    assert read_info(root).source == str(checkout.resolve())  # type: ignore[union-attr]


def test_concurrent_fetches_build_the_root_once(upstream_archive: Path, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    dest = tmp_path / "root"
    with ThreadPoolExecutor(3) as pool:
        roots = list(pool.map(lambda _: fetch(source=upstream_archive, dest=dest, show_progress=False), range(3)))
    assert roots == [dest] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [".root.lock", "root"]
