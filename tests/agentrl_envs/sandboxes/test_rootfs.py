"""Rootfs recipes: the cache key follows everything that shapes the result, and a built rootfs is reused."""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path

import pytest

from agentrl_envs.sandboxes import rootfs
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


def test_a_build_is_announced_first_with_its_size_time_and_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """debootstrap and the provisioning are replaced by tiny trees (the real ones take minutes); the rest is real."""
    said_before_build: list[list[str]] = []

    def debootstrap(recipe: RootfsRecipe, tree: Path, *, cache_dir: Path) -> None:
        said_before_build.append([r.getMessage() for r in caplog.records])
        (tree / "etc").mkdir(parents=True)
        (tree / "etc" / "os-release").write_text("ID=debian\n")

    monkeypatch.setattr(rootfs, "_debootstrap", debootstrap)
    monkeypatch.setattr(rootfs, "_provision", lambda recipe, tree: (tree / "provisioned").write_text("yes\n"))
    script = tmp_path / "provision.sh"
    script.write_text("true\n")
    toy = RootfsRecipe(f"toy-{tmp_path.name}", script=script, approx_gb=1.9)
    cache = tmp_path / "cache"
    with caplog.at_level(logging.WARNING, logger=rootfs.__name__):
        root = ensure_rootfs(toy, cache_dir=cache)
    assert (root / "provisioned").is_file() and (root / "etc" / "os-release").is_file()
    notices = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(notices) == 1  # one notice for the image and the base it starts from
    text = notices[0].getMessage()
    for part in (repr(toy.name), "first use only", "a few minutes", "about 1.9 GB", str(cache / "rootfs")):
        assert part in text, (part, text)
    assert said_before_build == [[text]]

    caplog.clear()
    shutil.rmtree(root)
    (cache / "rootfs" / f"{toy.key}.complete").unlink()
    with caplog.at_level(logging.WARNING, logger=rootfs.__name__):
        assert ensure_rootfs(toy, cache_dir=cache) == root  # unpacked from its tarball: no build, no notice
    assert (root / "provisioned").is_file() and not caplog.records


def test_os_images_carry_their_size() -> None:
    assert all(recipe(image).approx_gb for image in IMAGES)
    assert recipe("default").key == RootfsRecipe("os-default", script=PROVISION_SCRIPT, script_args=("default",)).key
