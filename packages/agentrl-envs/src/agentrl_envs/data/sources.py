"""Reading upstream's files from a source (a commit's ``.tar.gz`` or a local checkout), each one verified.

Only the files of the tree listing are read, by their listed paths; an archive member's own name never decides
where anything is written. A listed file the source lacks is reported in :attr:`UpstreamFiles.missing`.
"""

from __future__ import annotations

import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agentrl_envs.core.errors import DataError
from agentrl_envs.data.pinned import TreeListing
from agentrl_envs.data.verify import check_blob

__all__ = ["UpstreamFiles", "read_archive", "read_checkout"]

Progress = Callable[[int], None]
"""Called with the number of files read so far."""


@dataclass
class UpstreamFiles:
    """The verified contents of the listed files one source holds."""

    commit: str
    origin: str
    """Where the files came from (a URL, an archive or a checkout), as the data root's metadata records it."""
    files: dict[str, bytes] = field(default_factory=dict)
    """Upstream path -> contents (each matched its blob id)."""
    missing: list[str] = field(default_factory=list)
    """Listed upstream paths the source does not hold."""

    def text(self, path: str) -> str:
        """A file's contents as UTF-8 text."""
        return self.files[path].decode("utf-8")


def read_archive(
    archive: Path, listing: TreeListing, *, origin: str, progress: Progress | None = None
) -> UpstreamFiles:
    """Read the listed files from a ``.tar.gz`` of the commit (one top folder, as GitHub makes them).

    Raises:
        DataIntegrityError: If a file's contents do not match its blob id.
        DataError: If the archive is unreadable, is of another commit, or holds none of the listed files.
    """
    result = UpstreamFiles(listing.commit, origin)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for member in tar:
                path = member.name.split("/", 1)[1] if "/" in member.name else ""
                expected = listing.blobs.get(path)
                if expected is None or not member.isfile() or path in result.files:
                    continue
                extracted = tar.extractfile(member)
                assert extracted is not None  # a regular file always has contents
                data = extracted.read()
                check_blob(path, data, expected, origin=origin)
                result.files[path] = data
                if progress is not None:
                    progress(len(result.files))
            commented = tar.pax_headers.get("comment")
    except (tarfile.TarError, zlib.error, EOFError, OSError) as e:
        raise DataError(
            f"{origin} is not a readable .tar.gz ({type(e).__name__}: {e}): the download is corrupt or incomplete. "
            "Nothing was written; fetch again."
        ) from e
    # GitHub's tarballs name their commit in a pax header; an archive of another commit is refused outright.
    if commented and len(commented) == 40 and commented != listing.commit:
        raise DataError(f"{origin} is an archive of commit {commented}, not {listing.commit}.")
    return _finish(result, listing)


def read_checkout(checkout: Path, listing: TreeListing, *, progress: Progress | None = None) -> UpstreamFiles:
    """Read the listed files from a local AgentBench checkout (a clone at the commit, or its unpacked archive).

    Raises:
        DataIntegrityError: If a file differs from the commit's (e.g. the clone is at another commit).
        DataError: If the folder holds none of the listed files.
    """
    if not checkout.is_dir():
        raise DataError(f"{checkout} is not a folder; `agentrl-envs data import` takes an AgentBench checkout.")
    result = UpstreamFiles(listing.commit, str(checkout.resolve()))
    for path, expected in sorted(listing.blobs.items()):
        file = checkout / path
        if not file.is_file():
            continue
        data = file.read_bytes()
        check_blob(path, data, expected, origin=result.origin)
        result.files[path] = data
        if progress is not None:
            progress(len(result.files))
    return _finish(result, listing)


def _finish(result: UpstreamFiles, listing: TreeListing) -> UpstreamFiles:
    if not result.files:
        raise DataError(
            f"{result.origin} holds none of the files of {listing.commit[:7]} that the project uses "
            "(e.g. data/dbbench/standard.jsonl): is it an AgentBench archive or checkout?"
        )
    result.missing = sorted(set(listing.blobs) - set(result.files))
    return result
