"""Building a data root from verified upstream files, atomically (:mod:`.atomic`).

The root is assembled in a hidden staging folder beside its destination and renamed into place only when it is
complete, under a lock file. ``agentrl-data.json`` (written last) records the commit, the source,
the blob id of every file and what the source lacked.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from agentrl_envs.core.errors import DataError
from agentrl_envs.data.atomic import staged
from agentrl_envs.data.layout import data_root_path
from agentrl_envs.data.pinned import REPOSITORY, TreeListing
from agentrl_envs.data.prompts import derive_prompts
from agentrl_envs.data.sources import UpstreamFiles

__all__ = ["BUILDER_VERSION", "METADATA_FILE", "DataRootInfo", "install", "read_info"]

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


def install(files: UpstreamFiles, listing: TreeListing, dest: Path) -> DataRootInfo:
    """Build the data root of ``files`` at ``dest``, replacing what is there.

    The caller holds :func:`~agentrl_envs.data.atomic.locked` for ``dest``.

    Raises:
        DerivationError: If ``prompts.json`` cannot be derived from the sources.
        DataError: If ``dest`` exists and is not a data root this builder made.
    """
    if dest.is_dir() and not (dest / METADATA_FILE).is_file() and any(dest.iterdir()):
        raise DataError(f"{dest} exists and is not a data root built by agentrl-envs; choose another --dest.")
    with staged(dest) as staging:
        return _write(files, listing, staging)


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
