"""Root filesystems for sandboxes, built without any image registry.

A :class:`RootfsRecipe` names a Debian suite and a provisioning script. :func:`ensure_rootfs` builds it
once with ``debootstrap --variant=minbase`` plus the script (run in a bubblewrap build sandbox that has the
network, so apt works), stores the result as a tarball under ``<cache dir>/rootfs/`` keyed by the recipe's
hash, and keeps an unpacked copy next to it for the ``bwrap`` backend. Changing the recipe (or the
script) changes the hash, so the rootfs is rebuilt; an unchanged one is reused in milliseconds. A build takes
minutes and gigabytes, so it is announced first (a warning naming the size and the folder).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from agentrl_envs.core.data import resolve_cache_dir
from agentrl_envs.core.errors import BackendUnavailableError, InfraError
from agentrl_envs.core.file_lock import file_lock

__all__ = ["RootfsRecipe", "ensure_rootfs", "rootfs_tarball"]

logger = logging.getLogger(__name__)

_BUILDER_VERSION = "1"
"""Bumped when the build procedure itself changes, so every cached rootfs is rebuilt."""
_COMPLETE = ".complete"
"""Suffix of the marker file written next to an unpacked rootfs once it is whole."""
_DPKG_FORCE = "security-mac,downgrade,unsafe-io"
"""dpkg's default force options plus ``unsafe-io`` (no fsync per unpacked file) for debootstrap's and apt's dpkg
runs during a build: a failed build is thrown away, so the syncs only cost time. Only the build environment
gets it; the built system keeps dpkg's defaults."""


@dataclass(frozen=True)
class RootfsRecipe:
    """How to build one root filesystem."""

    name: str
    """Short name, part of the cache key (``os-default``)."""
    script: Path | None = None
    """A provisioning script run as root inside the new tree with ``script_args``; ``None`` for a bare base."""
    script_args: tuple[str, ...] = ()
    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    base_packages: tuple[str, ...] = field(default=())
    """Extra packages debootstrap includes in the base (``--include``)."""
    approx_gb: float | None = None
    """Rough disk use of a first build (tree, tarball and Debian base), said before building; not in the key."""

    def base(self) -> RootfsRecipe:
        """The bare debootstrap recipe this one starts from (shared by recipes of the same suite)."""
        return RootfsRecipe(
            f"{self.suite}-minbase", suite=self.suite, mirror=self.mirror, base_packages=self.base_packages
        )

    def digest(self) -> str:
        """A hash of everything that determines the result."""
        spec = {
            "builder": _BUILDER_VERSION,
            "suite": self.suite,
            "mirror": self.mirror,
            "base_packages": list(self.base_packages),
            "script": self.script.read_text(encoding="utf-8") if self.script else None,
            "script_args": list(self.script_args),
        }
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:16]

    @property
    def key(self) -> str:
        """The cache key: name plus hash."""
        return f"{self.name}-{self.digest()}"


def rootfs_tarball(recipe: RootfsRecipe, *, cache_dir: Path | None = None) -> Path:
    """The recipe's tarball, building it if needed (``docker import`` takes it as is)."""
    ensure_rootfs(recipe, cache_dir=cache_dir)
    return _store(cache_dir) / f"{recipe.key}.tar"


def ensure_rootfs(recipe: RootfsRecipe, *, cache_dir: Path | None = None) -> Path:
    """The unpacked root filesystem of ``recipe``, built or unpacked from its tarball when missing.

    A build is announced first, once per process, by a warning on this module's logger (shown even when logging
    is not configured): it takes a few minutes and ``recipe.approx_gb`` of disk under ``<cache dir>/rootfs``.

    Raises:
        BackendUnavailableError: If ``debootstrap`` or ``bwrap`` is missing and the rootfs must be built.
        InfraError: If the build fails (the message carries the tool's output).
    """
    return _ensure(recipe, cache_dir=cache_dir, announce=True)


def _ensure(recipe: RootfsRecipe, *, cache_dir: Path | None, announce: bool) -> Path:
    store = _store(cache_dir)
    target = store / recipe.key
    marker = store / f"{recipe.key}{_COMPLETE}"
    if marker.is_file():
        return target
    if announce and not (store / f"{recipe.key}.tar").is_file():
        _announce(recipe, store)  # before the lock: a process that waits for another's build says why too
    with file_lock(store / f"{recipe.key}.lock"):
        if marker.is_file():  # built by another process while we waited
            return target
        tarball = store / f"{recipe.key}.tar"
        if tarball.is_file():
            _unpack(tarball, target)
        else:
            _build(recipe, tarball, target, cache_dir=cache_dir)
        marker.touch()
    return target


_announced: set[str] = set()


def _announce(recipe: RootfsRecipe, store: Path) -> None:
    """Say, once per process and recipe, that a build starts: minutes of silence otherwise look like a hang."""
    if recipe.key in _announced:
        return
    _announced.add(recipe.key)
    size = f"about {recipe.approx_gb:g} GB" if recipe.approx_gb else "some disk space"
    logger.warning(
        "Building the sandbox root filesystem %r (first use only; later runs reuse it): it takes a few minutes, "
        "network access for debootstrap and apt, and %s under %s (set AGENTRL_CACHE_DIR to build elsewhere).",
        recipe.name,
        size,
        store,
    )


def _store(cache_dir: Path | None) -> Path:
    store = (cache_dir or resolve_cache_dir()) / "rootfs"
    store.mkdir(parents=True, exist_ok=True)
    return store


def _build(recipe: RootfsRecipe, tarball: Path, target: Path, *, cache_dir: Path | None) -> None:
    """Build the tree, pack it into ``tarball`` and keep the tree itself as the unpacked copy ``target``.

    Moving the tree saves unpacking the tarball again (a minute or two of disk writes for the larger images);
    the result is the same files, since ``tar`` stores everything the provisioning can set (no xattrs
    are set by the packages these recipes install).
    """
    store = tarball.parent
    with tempfile.TemporaryDirectory(prefix=f"build-{recipe.name}-", dir=store) as scratch:
        tree = Path(scratch) / "tree"
        if recipe.script is None:
            _debootstrap(recipe, tree, cache_dir=store)
        else:
            base = _ensure(recipe.base(), cache_dir=cache_dir, announce=False)  # part of this build's notice
            _run(["cp", "-a", "--reflink=auto", str(base), str(tree)], what=f"copying the {base.name} base")
            _provision(recipe, tree)
        partial = tarball.with_suffix(".tar.partial")
        _run(["tar", "-C", str(tree), "--numeric-owner", "-cf", str(partial), "."], what="packing the rootfs")
        partial.rename(tarball)
        shutil.rmtree(target, ignore_errors=True)
        tree.rename(target)
    logger.info("built rootfs %s", tarball)


def _debootstrap(recipe: RootfsRecipe, tree: Path, *, cache_dir: Path) -> None:
    if shutil.which("debootstrap") is None:
        raise BackendUnavailableError(
            "debootstrap is needed to build a sandbox root filesystem; install it (apt-get install debootstrap)."
        )
    debs = cache_dir / "debootstrap-debs"
    debs.mkdir(exist_ok=True)
    command = ["debootstrap", "--variant=minbase", f"--cache-dir={debs}"]
    if recipe.base_packages:
        command.append("--include=" + ",".join(recipe.base_packages))
    _run([*command, recipe.suite, str(tree), recipe.mirror], what="debootstrap", env={"DPKG_FORCE": _DPKG_FORCE})


def _provision(recipe: RootfsRecipe, tree: Path) -> None:
    """Run the recipe's script as root in the tree, inside a throwaway bubblewrap sandbox with network."""
    if shutil.which("bwrap") is None:
        raise BackendUnavailableError("bwrap is needed to provision a rootfs; install it (apt-get install bubblewrap).")
    assert recipe.script is not None
    command = [
        "bwrap",
        "--bind", str(tree), "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf",
        "--ro-bind", str(recipe.script), "/tmp/provision.sh",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--cap-add", "ALL",
        "--die-with-parent",
        "--setenv", "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "--setenv", "HOME", "/root",
        "--setenv", "DPKG_FORCE", _DPKG_FORCE,
        "bash", "/tmp/provision.sh", *recipe.script_args,
    ]  # fmt: skip
    _run(command, what=f"provisioning {recipe.name}")


def _unpack(tarball: Path, target: Path) -> None:
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    _run(["tar", "-C", str(partial), "--numeric-owner", "-xpf", str(tarball)], what="unpacking the rootfs")
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def _run(command: list[str], *, what: str, env: dict[str, str] | None = None) -> None:
    environment = {**os.environ, **env} if env else None
    result = subprocess.run(command, capture_output=True, text=True, errors="replace", check=False, env=environment)
    if result.returncode != 0:
        tail = (result.stdout + result.stderr)[-3000:]
        raise InfraError(f"Rootfs build failed while {what} (exit {result.returncode}): {tail}")
