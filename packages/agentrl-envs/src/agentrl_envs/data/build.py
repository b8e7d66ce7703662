"""Building a data root from verified upstream files, atomically.

The root is assembled in a hidden staging folder beside its destination and renamed into place only when it is
complete, under a lock file, so a failed or interrupted build leaves nothing at the destination and two processes
building the same root at once build it once. ``agentrl-data.json`` (written last) records the commit, the source,
the blob id of every file and what the source lacked.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import shutil
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agentrl_envs.core.errors import DataError
from agentrl_envs.data.layout import data_root_path
from agentrl_envs.data.pinned import REPOSITORY, TreeListing
from agentrl_envs.data.prompts import derive_prompts
from agentrl_envs.data.sources import UpstreamFiles

__all__ = ["BUILDER_VERSION", "METADATA_FILE", "DataRootInfo", "install", "locked", "read_info"]

logger = logging.getLogger(__name__)

METADATA_FILE = "agentrl-data.json"
BUILDER_VERSION = 1
"""Raised when the layout or the prompts derivation changes, so roots built by an older version are rebuilt."""


class DataRootInfo(BaseModel):
    """What ``agentrl-data.json`` says about a built data root."""

    model_config = ConfigDict(extra="forbid")

    commit: str
    source: str
    """The URL, archive or checkout the files came from."""
    builder_version: int
    built_at: str
    files: dict[str, str]
    """Data-root path -> git blob id of each copied file."""
    missing: dict[str, str]
    """Data-root path (upstream path, for a prompts source) -> upstream path, of each listed file the source lacked."""
    prompts_tasks: list[str]
    """The tasks ``prompts.json`` has texts for."""

    @property
    def is_complete(self) -> bool:
        """Whether the source held every file the project uses."""
        return not self.missing


def read_info(root: Path) -> DataRootInfo | None:
    """The metadata of a built data root, or ``None`` for a root made another way (or by an older builder)."""
    path = root / METADATA_FILE
    if not path.is_file():
        return None
    try:
        info = DataRootInfo.model_validate_json(path.read_text(encoding="utf-8"))
    except ValidationError:
        return None
    return info if info.builder_version == BUILDER_VERSION else None


@contextlib.contextmanager
def locked(dest: Path) -> Iterator[None]:
    """Hold the build lock of a destination (other builders of it wait).

    Staging folders left by builds that were killed are cleared while the lock is held.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    with open(dest.parent / f".{dest.name}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            for stale in dest.parent.glob(f".{dest.name}.*-*"):
                if stale.is_dir():
                    shutil.rmtree(stale, ignore_errors=True)
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def install(files: UpstreamFiles, listing: TreeListing, dest: Path) -> DataRootInfo:
    """Build the data root of ``files`` at ``dest``, replacing what is there; the caller holds :func:`locked`.

    Raises:
        DerivationError: If ``prompts.json`` cannot be derived from the sources.
        DataError: If ``dest`` exists and is not a data root this builder made.
    """
    if dest.is_dir() and not (dest / METADATA_FILE).is_file() and any(dest.iterdir()):
        raise DataError(f"{dest} exists and is not a data root built by agentrl-envs; choose another --dest.")
    staging = dest.parent / f".{dest.name}.staging-{uuid.uuid4().hex[:8]}"
    try:
        info = _write(files, listing, staging)
        _swap(staging, dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return info


def _write(files: UpstreamFiles, listing: TreeListing, root: Path) -> DataRootInfo:
    prompts = derive_prompts(files, repository=REPOSITORY)
    copied: dict[str, str] = {}
    for path, data in sorted(files.files.items()):
        target = data_root_path(path)
        if target is None:
            continue  # a prompts source: read, not copied
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (root / target).write_bytes(data)
        copied[target] = listing.blobs[path]
    (root / "prompts.json").write_text(json.dumps(prompts, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    info = DataRootInfo(
        commit=files.commit,
        source=files.origin,
        builder_version=BUILDER_VERSION,
        built_at=datetime.now(UTC).isoformat(timespec="seconds"),
        files=copied,
        missing={data_root_path(path) or path: path for path in files.missing},
        prompts_tasks=sorted(prompts["tasks"]),
    )
    (root / METADATA_FILE).write_text(info.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return info


def _swap(staging: Path, dest: Path) -> None:
    """Put the finished root in place: one rename, after moving an old root aside."""
    if not dest.exists():
        staging.rename(dest)
        return
    old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:8]}"
    dest.rename(old)
    staging.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
