"""Rootfs recipes: the cache key follows everything that shapes the result, and a built rootfs is reused."""

from __future__ import annotations

import time
from pathlib import Path

from agentrl_envs.sandboxes.rootfs import RootfsRecipe, ensure_rootfs
from agentrl_envs.tasks.os.images import IMAGES, PROVISION_SCRIPT, recipe


def test_key_changes_with_the_script_and_its_arguments(tmp_path: Path) -> None:
    script = tmp_path / "provision.sh"
    script.write_text("echo one\n")
    first = RootfsRecipe("x", script=script, script_args=("a",))
    assert first.key == RootfsRecipe("x", script=script, script_args=("a",)).key
    assert first.key != RootfsRecipe("x", script=script, script_args=("b",)).key
    assert first.key != RootfsRecipe("x", script=script, script_args=("a",), suite="trixie").key
    before = first.key
    script.write_text("echo two\n")
    assert first.key != before


def test_images_share_one_base_and_script() -> None:
    recipes = [recipe(image) for image in IMAGES]
    assert {r.script for r in recipes} == {PROVISION_SCRIPT}
    assert len({r.base().key for r in recipes}) == 1
    assert len({r.key for r in recipes}) == len(IMAGES)


def test_built_rootfs_is_reused() -> None:
    started = time.monotonic()
    root = ensure_rootfs(recipe("default"))  # built by bootstrap or an earlier test; cached from then on
    assert time.monotonic() - started < 1.0 or (root / "usr/bin/python3").exists()
    started = time.monotonic()
    assert ensure_rootfs(recipe("default")) == root
    assert time.monotonic() - started < 0.5
    for tool in ("usr/bin/python3", "usr/bin/gcc", "usr/bin/sudo", "usr/bin/ps", "usr/bin/git"):
        assert (root / tool).exists(), tool
