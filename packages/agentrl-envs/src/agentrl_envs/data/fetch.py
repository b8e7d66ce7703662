"""``fetch`` and ``import_checkout``: make the data root of a commit, from a download, an archive or a checkout.

The default destination is ``$AGENTRL_CACHE_DIR/agentbench/<commit>/``; a data root already built there by this
version is kept (the call is a no-op) unless ``force`` is set. :func:`cached_data_root` is the last step of data
root resolution: the cached root, fetched on first use unless ``AGENTRL_OFFLINE=1``.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import httpx

from agentrl_envs.core.cache import resolve_cache_dir
from agentrl_envs.core.errors import DataError
from agentrl_envs.data.atomic import locked
from agentrl_envs.data.build import install, read_info
from agentrl_envs.data.download import download, local_source
from agentrl_envs.data.pinned import PINNED_COMMIT, TreeListing, github_archive_url, load_listing
from agentrl_envs.data.sources import UpstreamFiles, read_archive, read_checkout

__all__ = [
    "DATA_URL_ENV",
    "OFFLINE_ENV",
    "cached_data_root",
    "default_data_root",
    "fetch",
    "import_checkout",
    "is_offline",
]

logger = logging.getLogger(__name__)

DATA_URL_ENV = "AGENTRL_DATA_URL"
"""A mirror of the archive: an ``http(s)://`` or ``file://`` URL, or a local ``.tar.gz`` path."""
OFFLINE_ENV = "AGENTRL_OFFLINE"


def default_data_root(commit: str = PINNED_COMMIT) -> Path:
    """``$AGENTRL_CACHE_DIR/agentbench/<commit>``: where ``fetch`` builds a commit's data root by default."""
    return resolve_cache_dir() / "agentbench" / commit


def is_offline() -> bool:
    """Whether ``AGENTRL_OFFLINE`` forbids downloads."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def fetch(
    *,
    commit: str = PINNED_COMMIT,
    source: str | os.PathLike[str] | None = None,
    dest: str | os.PathLike[str] | None = None,
    tree_file: str | os.PathLike[str] | None = None,
    force: bool = False,
    show_progress: bool | None = None,
    transport: httpx.BaseTransport | None = None,
) -> Path:
    """Download upstream AgentBench at ``commit``, verify every file it uses, and build its data root.

    Args:
        commit: The commit (default: the pinned one, whose tree listing ships with the package).
        source: Where the commit's ``.tar.gz`` is: a URL (``http(s)://``, ``file://``) or a local path. Default:
            ``$AGENTRL_DATA_URL``, else GitHub's tarball of the commit.
        dest: The data root to build (default ``$AGENTRL_CACHE_DIR/agentbench/<commit>``).
        tree_file: ``git ls-tree -r <commit>`` output, for a commit whose listing is not packaged.
        force: Rebuild even if ``dest`` already holds this commit's data root.
        show_progress: Draw a download bar (default: when stderr is a terminal).
        transport: An httpx transport for the download (tests).

    Returns:
        The data root.

    Raises:
        DataIntegrityError: If a file does not match the commit's blob id (nothing is written).
        DataError: If the source cannot be read or downloaded.
    """
    listing = load_listing(commit, tree_file)
    target = Path(dest).expanduser() if dest is not None else default_data_root(commit)
    where = str(source or os.environ.get(DATA_URL_ENV) or github_archive_url(commit))
    progress = sys.stderr.isatty() if show_progress is None else show_progress

    def read() -> UpstreamFiles:
        archive = _local_archive(where)
        if archive is not None:
            return read_archive(archive, listing, origin=where)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}.download-") as tmp:
            file = Path(tmp) / "archive.tar.gz"
            download(where, file, show_progress=progress, transport=transport)
            return read_archive(file, listing, origin=where)

    return _build(target, listing, read, force=force)


def import_checkout(
    checkout: str | os.PathLike[str],
    *,
    commit: str = PINNED_COMMIT,
    dest: str | os.PathLike[str] | None = None,
    tree_file: str | os.PathLike[str] | None = None,
    force: bool = False,
) -> Path:
    """Build the data root from a local AgentBench checkout at ``commit`` (same checks and layout as :func:`fetch`).

    Raises:
        DataIntegrityError: If a file differs from the commit's (e.g. the checkout is at another commit).
        DataError: If the folder is not an AgentBench checkout.
    """
    listing = load_listing(commit, tree_file)
    target = Path(dest).expanduser() if dest is not None else default_data_root(commit)
    return _build(target, listing, lambda: read_checkout(Path(checkout).expanduser(), listing), force=force)


def cached_data_root() -> Path:
    """The pinned commit's data root in the cache, fetched now if it is not there (unless offline).

    Raises:
        DataError: If it is not there and ``AGENTRL_OFFLINE`` is set, or the fetch fails.
    """
    target = default_data_root()
    if _is_built(target, PINNED_COMMIT):
        return target
    if is_offline():
        raise DataError(
            f"No AgentBench data root in the cache ({target}) and {OFFLINE_ENV} forbids downloading it. Run "
            "`agentrl-envs data fetch` (with --from FILE_OR_URL for a mirror) where the network allows, pass "
            "data_root=... (--data-root on the command line), or set AGENTRL_DATA_ROOT."
        )
    where = os.environ.get(DATA_URL_ENV) or github_archive_url(PINNED_COMMIT)
    logger.warning(
        "agentrl-envs: fetching AgentBench %s from %s into %s once (set %s=1 to forbid)",
        PINNED_COMMIT[:7],
        where,
        target,
        OFFLINE_ENV,
    )
    return fetch()


def _build(target: Path, listing: TreeListing, read: Callable[[], UpstreamFiles], *, force: bool) -> Path:
    if not force and _is_built(target, listing.commit):
        logger.info("AgentBench %s is already at %s", listing.commit[:7], target)
        return target
    with locked(target):
        if not force and _is_built(target, listing.commit):  # another process built it while this one waited
            return target
        files = read()
        info = install(files, listing, target)
    absent = f"; absent from the source: {', '.join(info.missing)}" if info.missing else ""
    logger.info("Built %s from %s: %d files verified%s", target, info.source, len(info.files), absent)
    return target


def _is_built(root: Path, commit: str) -> bool:
    info = read_info(root)
    return info is not None and info.commit == commit and (root / "prompts.json").is_file()


def _local_archive(where: str) -> Path | None:
    """The local file a source names (a path or a ``file://`` URL), or ``None`` for a download."""
    path = local_source(where)
    if path is not None and not path.is_file():
        raise DataError(f"{where} is neither an http(s) URL nor an existing .tar.gz file.")
    return path
