"""The pinned upstream commit and its tree listing: the facts every fetched file is checked against.

``pinned/<commit>.tree`` is ``git ls-tree -r <commit>`` of AgentBench, reduced to the files the project uses
(:mod:`.layout`): mode, type, git blob id and path. A blob id is a hash of a file's bytes, so it verifies a file
from any source (GitHub's tarball, a mirror, a local checkout), also one the source lacks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from agentrl_envs.core.errors import DataError
from agentrl_envs.data.layout import is_used

__all__ = ["PINNED_COMMIT", "REPOSITORY", "TreeListing", "github_archive_url", "load_listing"]

PINNED_COMMIT = "578c5e9f706fc2dd96188ca6c8cf9095ca0c6528"
"""AgentBench ``main`` on 2025-11-17, the function-calling (FC) version the AgentRL paper evaluates."""
REPOSITORY = "THUDM/AgentBench"
_COMMIT = re.compile(r"[0-9a-f]{40}")


def github_archive_url(commit: str) -> str:
    """GitHub's tarball of a commit (what ``agentrl-envs data fetch`` downloads by default)."""
    return f"https://codeload.github.com/{REPOSITORY}/tar.gz/{commit}"


@dataclass(frozen=True)
class TreeListing:
    """Path -> git blob id of the files the project uses, at one commit."""

    commit: str
    blobs: dict[str, str]

    @classmethod
    def parse(cls, commit: str, text: str, *, origin: str) -> TreeListing:
        r"""Read ``git ls-tree -r`` output (``<mode> blob <id>\t<path>`` per line), keeping the files the project uses.

        Raises:
            DataError: If a line is not ``git ls-tree`` output.
        """
        blobs: dict[str, str] = {}
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            meta, tab, path = line.partition("\t")
            fields = meta.split()
            if not tab or len(fields) != 3 or not _COMMIT.fullmatch(fields[2]):
                raise DataError(f"{origin}:{number} is not a `git ls-tree -r` line: {line!r}")
            if fields[1] == "blob" and is_used(path):
                blobs[path] = fields[2]
        return cls(commit, blobs)


def load_listing(commit: str = PINNED_COMMIT, tree_file: str | os.PathLike[str] | None = None) -> TreeListing:
    """The tree listing of ``commit``: the packaged one, or ``tree_file`` (``git ls-tree -r <commit>`` output).

    Raises:
        DataError: If ``commit`` is not a full commit id, or no listing of it is packaged and none is given.
    """
    if not _COMMIT.fullmatch(commit):
        raise DataError(f"{commit!r} is not a full 40-hex-digit commit id.")
    if tree_file is not None:
        path = Path(tree_file)
        if not path.is_file():
            raise DataError(f"Tree listing {path} not found.")
        return TreeListing.parse(commit, path.read_text(encoding="utf-8"), origin=str(path))
    packaged = resources.files("agentrl_envs.data").joinpath("pinned").joinpath(f"{commit}.tree")
    if not packaged.is_file():
        raise DataError(
            f"No tree listing of commit {commit} ships with agentrl-envs (only {PINNED_COMMIT}), so its files "
            f"cannot be verified. Pass its listing with --tree FILE (`git ls-tree -r {commit} > FILE` in a clone)."
        )
    return TreeListing.parse(
        commit, packaged.read_text(encoding="utf-8"), origin=f"agentrl_envs/data/pinned/{commit}.tree"
    )
