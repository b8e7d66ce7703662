"""Fetch BFCL's pinned wheel and extract the multi-turn data and backends into the cache.

The Berkeley Function Calling Leaderboard ships as the ``bfcl-eval`` wheel on PyPI. Installing it is not an
option for the eval-only install: it pins ``numpy==1.26.4`` and pulls sentence-transformers, faiss and a
dozen API SDKs. The multi-turn categories need none of that, so the wheel is fetched like a data set
instead: downloaded once from PyPI's files host (or ``--from`` a local file or mirror URL), checked against
the pinned sha256, and the few members the environments read are extracted into
``$AGENTRL_CACHE_DIR/bfcl/<version>/`` atomically, as the AgentBench data root is built
(:mod:`agentrl_envs.data.atomic`: a half-written tree is never visible). Nothing is
installed and nothing outside the cache changes.

``python -m agentrl_envs.tasks.bfcl.fetch [--from PATH_OR_URL] [--force]`` runs it ahead of time (CI does,
so tests read the cached copy); the environments call :func:`ensure_bfcl` on first use unless
``AGENTRL_OFFLINE=1``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from agentrl_envs.core.data import resolve_cache_dir
from agentrl_envs.core.errors import DataError
from agentrl_envs.data.atomic import locked, staged
from agentrl_envs.data.download import download, local_source
from agentrl_envs.data.fetch import OFFLINE_ENV, is_offline

__all__ = ["BFCL_WHEEL", "PinnedWheel", "ensure_bfcl", "fetch_bfcl", "main"]

logger = logging.getLogger(__name__)

SOURCE_ENV = "AGENTRL_BFCL_FROM"
"""A local wheel file or a mirror URL to fetch from instead of PyPI."""
_COMPLETE = "FETCHED.json"
"""Written last into an extracted tree; a tree without it is never used."""


@dataclass(frozen=True)
class PinnedWheel:
    """The one release of ``bfcl-eval`` the environments are built against."""

    version: str
    url: str
    sha256: str
    size: int

    @property
    def filename(self) -> str:
        """The wheel's file name."""
        return self.url.rsplit("/", 1)[-1]


BFCL_WHEEL = PinnedWheel(
    version="2026.3.23",
    url=(
        "https://files.pythonhosted.org/packages/ba/41/ed458527c770c50225b60bae3b0c3444b26804ee455fa2d8f187018d2cb2/"
        "bfcl_eval-2026.3.23-py3-none-any.whl"
    ),
    sha256="3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a",
    size=1925664,
)

_CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
_BACKENDS = (
    "gorilla_file_system",
    "long_context",
    "math_api",
    "message_api",
    "posting_api",
    "ticket_api",
    "trading_bot",
    "travel_booking",
    "vehicle_control",
)
_FUNC_DOCS = (
    "gorilla_file_system",
    "math_api",
    "message_api",
    "posting_api",
    "ticket_api",
    "trading_bot",
    "travel_booking",
    "vehicle_control",
)
MEMBERS: tuple[str, ...] = (
    "bfcl_eval/__init__.py",
    "bfcl_eval/constants/__init__.py",
    "bfcl_eval/constants/default_prompts.py",
    "bfcl_eval/constants/enums.py",
    "bfcl_eval/constants/executable_backend_config.py",
    "bfcl_eval/constants/type_mappings.py",
    "bfcl_eval/utils.py",
    "bfcl_eval/model_handler/utils.py",
    "bfcl_eval/eval_checker/__init__.py",
    "bfcl_eval/eval_checker/multi_turn_eval/__init__.py",
    "bfcl_eval/eval_checker/multi_turn_eval/multi_turn_checker.py",
    "bfcl_eval/eval_checker/multi_turn_eval/multi_turn_utils.py",
    "bfcl_eval/eval_checker/multi_turn_eval/func_source_code/__init__.py",
    *(f"bfcl_eval/eval_checker/multi_turn_eval/func_source_code/{name}.py" for name in _BACKENDS),
    *(f"bfcl_eval/data/BFCL_v4_multi_turn_{category}.json" for category in _CATEGORIES),
    *(f"bfcl_eval/data/possible_answer/BFCL_v4_multi_turn_{category}.json" for category in _CATEGORIES),
    *(f"bfcl_eval/data/multi_turn_func_doc/{name}.json" for name in _FUNC_DOCS),
    f"bfcl_eval-{BFCL_WHEEL.version}.dist-info/METADATA",
)
"""What the environments read: the multi-turn data, BFCL's checker and the pure-Python backends it runs, and
the two utility modules whose tool-schema functions are read (not imported; see :mod:`.upstream`). The
memory and web-search backends (faiss, sentence-transformers, serpapi) are left in the wheel."""


def bfcl_dir(cache_dir: Path | None = None, wheel: PinnedWheel = BFCL_WHEEL) -> Path:
    """Where the extracted tree of ``wheel`` lives: ``<cache>/bfcl/<version>``."""
    return (cache_dir or resolve_cache_dir()) / "bfcl" / wheel.version


def ensure_bfcl(cache_dir: Path | None = None) -> Path:
    """The extracted BFCL tree, fetched first if the cache lacks it (unless ``AGENTRL_OFFLINE=1``).

    Raises:
        DataError: If the tree is missing and may not or cannot be fetched.
    """
    target = bfcl_dir(cache_dir)
    if (target / _COMPLETE).is_file():
        return target
    if is_offline():
        raise DataError(
            f"BFCL data is not in the cache ({target}) and {OFFLINE_ENV}=1 forbids fetching it. Run "
            "`python -m agentrl_envs.tasks.bfcl.fetch --from bfcl_eval-"
            f"{BFCL_WHEEL.version}-py3-none-any.whl` with a copy of the wheel, or unset {OFFLINE_ENV}."
        )
    return fetch_bfcl(os.environ.get(SOURCE_ENV), cache_dir=cache_dir)


def fetch_bfcl(source: str | None = None, *, cache_dir: Path | None = None, force: bool = False) -> Path:
    """Download (or copy) the pinned wheel, verify it, and extract the members the environments read.

    Args:
        source: A local wheel path, or a URL (``https://``, ``file://``); default PyPI's files host.
        cache_dir: The cache root; default ``$AGENTRL_CACHE_DIR``.
        force: Extract again even if the tree is already there.

    Returns:
        The extracted tree (``<cache>/bfcl/<version>``).

    Raises:
        DataError: If the wheel cannot be read or its sha256 is not the pinned one.
    """
    target = bfcl_dir(cache_dir)
    if (target / _COMPLETE).is_file() and not force:
        return target
    with locked(target):
        if (target / _COMPLETE).is_file() and not force:  # another process extracted it while this one waited
            return target
        wheel_path = _cached_wheel(source, target.parent)
        with staged(target) as staging:
            _extract(wheel_path, staging)
    logger.info("BFCL %s extracted to %s", BFCL_WHEEL.version, target)
    return target


def _cached_wheel(source: str | None, folder: Path) -> Path:
    """The verified wheel in the cache, downloaded or copied there first when missing or corrupt."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / BFCL_WHEEL.filename
    if path.is_file() and _sha256(path) == BFCL_WHEEL.sha256 and source is None:
        return path
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".download-", suffix=".whl")
    os.close(handle)
    try:
        _copy_or_download(source or BFCL_WHEEL.url, Path(temporary))
        digest = _sha256(Path(temporary))
        if digest != BFCL_WHEEL.sha256:
            raise DataError(
                f"The wheel from {source or BFCL_WHEEL.url} has sha256 {digest}, not the pinned "
                f"{BFCL_WHEEL.sha256} of bfcl-eval {BFCL_WHEEL.version}; fetch that exact file (`pip download "
                f"--no-deps bfcl-eval=={BFCL_WHEEL.version}`) and pass it with --from."
            )
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return path


def _copy_or_download(source: str, destination: Path) -> None:
    local = local_source(source)
    if local is None:
        try:  # the data fetch's downloader: retries on transport errors and 5xx, with a progress bar
            download(source, destination, show_progress=sys.stderr.isatty())
        except DataError as e:
            raise DataError(
                f"Could not download the BFCL wheel from {source}: {e} Pass a local copy with --from "
                f"(or ${SOURCE_ENV}), e.g. from `pip download --no-deps bfcl-eval=={BFCL_WHEEL.version}`."
            ) from e
        return
    if not local.is_file():
        raise DataError(f"BFCL wheel not found at {local}; give the path of bfcl_eval-{BFCL_WHEEL.version}-*.whl.")
    shutil.copyfile(local, destination)


def _extract(wheel_path: Path, folder: Path) -> None:
    """Extract :data:`MEMBERS` of the wheel into ``folder``, and the marker last."""
    with zipfile.ZipFile(wheel_path) as archive:
        names = set(archive.namelist())
        missing = [m for m in MEMBERS if m not in names]
        if missing:
            raise DataError(f"{wheel_path} lacks {missing}; it is not bfcl-eval {BFCL_WHEEL.version}.")
        for member in MEMBERS:
            destination = folder / member
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_bytes(archive.read(member))
    marker = {"package": "bfcl-eval", "version": BFCL_WHEEL.version, "sha256": BFCL_WHEEL.sha256}
    (folder / _COMPLETE).write_text(json.dumps(marker, indent=2) + "\n", encoding="utf-8")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    """``python -m agentrl_envs.tasks.bfcl.fetch``: fetch and extract the pinned BFCL wheel into the cache."""
    parser = argparse.ArgumentParser(prog="python -m agentrl_envs.tasks.bfcl.fetch", description=main.__doc__)
    parser.add_argument("--from", dest="source", help=f"local wheel or mirror URL (default ${SOURCE_ENV}, then PyPI)")
    parser.add_argument("--force", action="store_true", help="extract again even if the cache has the tree")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        path = fetch_bfcl(args.source or os.environ.get(SOURCE_ENV), force=args.force)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)  # noqa: T201 - a CLI
        return 1
    print(path)  # noqa: T201 - a CLI
    return 0


if __name__ == "__main__":
    sys.exit(main())
