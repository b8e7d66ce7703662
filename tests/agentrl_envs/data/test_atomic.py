"""A folder is put in place whole or not at all, and one builder at a time builds it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from agentrl_envs.data.atomic import locked, staged


def test_a_finished_block_replaces_the_destination_with_one_rename(tmp_path: Path) -> None:
    dest = tmp_path / "root"
    dest.mkdir()
    (dest / "old.txt").write_text("old")
    with locked(dest), staged(dest) as staging:
        assert staging.parent == tmp_path and staging.name.startswith(".root.staging-")
        (staging / "new.txt").write_text("new")
    assert sorted(p.name for p in dest.iterdir()) == ["new.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".root.lock", "root"]


def test_an_error_in_the_block_leaves_the_destination_as_it_was(tmp_path: Path) -> None:
    dest = tmp_path / "root"
    dest.mkdir()
    (dest / "old.txt").write_text("old")
    with pytest.raises(RuntimeError, match="half way"), locked(dest), staged(dest) as staging:
        (staging / "new.txt").write_text("new")
        raise RuntimeError("half way")
    assert sorted(p.name for p in dest.iterdir()) == ["old.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".root.lock", "root"]


def test_a_killed_builders_staging_folder_is_cleared_by_the_next_one(tmp_path: Path) -> None:
    dest = tmp_path / "root"
    (tmp_path / ".root.staging-deadbeef").mkdir()  # what a SIGKILLed build leaves
    with locked(dest):
        pass
    assert not (tmp_path / ".root.staging-deadbeef").exists()


def test_builders_of_one_destination_take_turns(tmp_path: Path) -> None:
    dest = tmp_path / "root"
    inside: list[int] = []
    overlaps: list[int] = []

    def build(n: int) -> None:
        with locked(dest):
            if inside:
                overlaps.append(n)
            inside.append(n)
            time.sleep(0.05)
            inside.remove(n)

    threads = [threading.Thread(target=build, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps == []
