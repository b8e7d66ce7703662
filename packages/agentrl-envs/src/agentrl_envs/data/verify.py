"""Git blob ids: how every upstream file is checked against the pinned tree listing."""

from __future__ import annotations

import hashlib

from agentrl_envs.core.errors import DataIntegrityError

__all__ = ["blob_id", "check_blob"]


def blob_id(data: bytes) -> str:
    r"""The id git gives a file's contents: ``sha1(b"blob <size>\0" + data)``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def check_blob(path: str, data: bytes, expected: str, *, origin: str) -> None:
    """Refuse a file whose contents are not the pinned commit's.

    Raises:
        DataIntegrityError: Naming the file, where it came from, and both ids.
    """
    actual = blob_id(data)
    if actual != expected:
        raise DataIntegrityError(
            f"{path} from {origin} is not the file of the pinned commit (git blob {actual}, expected {expected}): "
            "the download is corrupt or the source is another version. Nothing was written; fetch again, or from "
            "another source (--from / AGENTRL_DATA_URL)."
        )
