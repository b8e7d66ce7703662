"""The pinned facts that ship with the package agree with the commit's own tree listing, and the status table agrees
with the files the tasks read."""

from __future__ import annotations

from pathlib import Path

from agentrl_envs.data.layout import is_used
from agentrl_envs.data.pinned import PINNED_COMMIT, TreeListing, load_listing
from agentrl_envs.data.status import SPLIT_FILES
from agentrl_envs.tasks.db.data import SPLIT_FILES as DB_FILES
from agentrl_envs.tasks.db.data import TRAIN_FILE as DB_TRAIN
from agentrl_envs.tasks.kg.data import SPLIT_FILES as KG_FILES


def test_the_packaged_listing_is_the_commits_listing_of_the_files_used(upstream_archive: Path) -> None:
    full = (upstream_archive.parent / "AgentBench-578c5e9.tree").read_text(encoding="utf-8")
    assert load_listing() == TreeListing.parse(PINNED_COMMIT, full, origin="reference")
    assert len(load_listing().blobs) == 143
    assert not is_used("src/server/tasks/dbbench/Dockerfile") and not is_used("data/avalon/dev.json")


def test_the_status_table_names_the_files_the_tasks_read() -> None:
    assert {s: f for s, (f,) in SPLIT_FILES["db"].items()} == {**DB_FILES, "train": DB_TRAIN}
    assert {s: files[0] for s, files in SPLIT_FILES["kg"].items()} == KG_FILES
