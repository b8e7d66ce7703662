"""Downloading an archive over HTTP(S) with a progress bar, retrying transport failures.

httpx streams the body to a file. A transport error (connection refused or reset, timeout, truncated body) or
a 5xx answer restarts the download after a bounded exponential backoff; any other HTTP error is final and
explained.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from agentrl_envs.core.errors import DataError

__all__ = ["download", "local_source"]

logger = logging.getLogger(__name__)

ATTEMPTS = 4
BACKOFF_S = 1.0
MAX_BACKOFF_S = 20.0
TIMEOUT = httpx.Timeout(60.0, connect=15.0)


def local_source(source: str) -> Path | None:
    """The local file a source names (a path or a ``file://`` URL), or ``None`` when it is an ``http(s)`` URL.

    Whether the file exists is the caller's to check (each says what it expected there).
    """
    if source.startswith(("http://", "https://")):
        return None
    return Path(source.removeprefix("file://")).expanduser()


class _Retryable(Exception):
    """A failure worth another attempt."""


def download(
    url: str,
    target: Path,
    *,
    show_progress: bool = True,
    transport: httpx.BaseTransport | None = None,
    attempts: int = ATTEMPTS,
    backoff_s: float = BACKOFF_S,
) -> None:
    """Download ``url`` to ``target``.

    Args:
        url: An ``http(s)://`` URL.
        target: The file to write (overwritten).
        show_progress: Draw a progress bar on stderr.
        transport: An httpx transport (tests pass ``httpx.MockTransport``).
        attempts: Tries in all; transport errors and 5xx answers are retried.
        backoff_s: The wait before the second try, doubled for each further one (at most 20 s).

    Raises:
        DataError: If the server answers with a client error, or every attempt failed.
    """
    with httpx.Client(follow_redirects=True, timeout=TIMEOUT, transport=transport) as client:
        for attempt in range(1, attempts + 1):
            try:
                _attempt(client, url, target, show_progress)
                return
            except _Retryable as e:
                if attempt == attempts:
                    raise DataError(
                        f"Downloading {url} failed {attempts} times (last: {e.__cause__ or e}). Check the network, "
                        "or fetch from a mirror or a local file with --from / AGENTRL_DATA_URL."
                    ) from e
                wait_s = min(backoff_s * 2 ** (attempt - 1), MAX_BACKOFF_S)
                logger.warning("Downloading %s failed (%s); retrying in %.0f s", url, e.__cause__ or e, wait_s)
                time.sleep(wait_s)


def _attempt(client: httpx.Client, url: str, target: Path, show_progress: bool) -> None:
    try:
        with client.stream("GET", url) as response:
            if response.status_code >= 500:
                raise _Retryable(f"HTTP {response.status_code}")
            if response.status_code >= 400:
                raise DataError(
                    f"{url} answered HTTP {response.status_code} {response.reason_phrase}: no archive there. Check "
                    "the commit id, or the mirror's address (--from / AGENTRL_DATA_URL)."
                )
            total = int(response.headers["content-length"]) if "content-length" in response.headers else None
            with _bar(show_progress, url, total) as advance, target.open("wb") as out:
                for chunk in response.iter_bytes():
                    out.write(chunk)
                    advance(len(chunk))
    except httpx.TransportError as e:
        raise _Retryable(type(e).__name__) from e


@contextlib.contextmanager
def _bar(enabled: bool, url: str, total: int | None) -> Iterator[Callable[[int], None]]:
    """A rich download bar on stderr (or nothing); yields the function that advances it by a number of bytes."""
    if not enabled:
        yield lambda nbytes: None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as progress:
        task = progress.add_task(f"AgentBench {url.rsplit('/', 1)[-1][:7]}", total=total)
        yield lambda nbytes: progress.advance(task, nbytes)
