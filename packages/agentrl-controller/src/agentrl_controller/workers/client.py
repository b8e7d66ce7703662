"""HTTP client for one worker, speaking the worker side of the AgentRL API (as ``agentrl-worker`` serves it).

Local workers listen on a Unix socket, remote ones on TCP; both are the same API. Transport failures and
error answers become :class:`~agentrl_controller.errors.WorkerError` with the worker's status code, so the
caller can tell "the worker refused" (a code) from "the worker is gone" (none).

This hop uses the small keep-alive client of :mod:`agentrl_controller.http.client`: every interact passes
through it, httpx's pool stalled with tens of requests in flight, and aiohttp's per-request machinery was about a
quarter of the controller's CPU per no-op interact (``bench/controller_load.py``, docs/benchmarks.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentrl_controller.errors import WorkerError
from agentrl_controller.http.client import HttpPool
from agentrl_envs.wire import cancel_body, worker_interact_request, worker_start_sample_request

__all__ = ["WorkerClient"]

_ENCODE = json.JSONEncoder(separators=(",", ":")).encode
"""Compact ``json.dumps``, built once (``dumps`` with a non-default setting builds an encoder per call)."""


class WorkerClient:
    """Pooled connections to one worker's ``.../api`` base URL."""

    def __init__(
        self,
        address: str,
        *,
        uds: str | None = None,
        max_connections: int = 256,
        read_timeout_s: float | None = None,
    ) -> None:
        """Prepare a connection pool (opened on the first request, inside the event loop).

        Args:
            address: The worker's API base URL, e.g. ``http://127.0.0.1:5021/api``.
            uds: A Unix socket path to connect through instead of TCP (local workers).
            max_connections: Pool size; sessions beyond it wait for a connection.
            read_timeout_s: ``None`` waits as long as the task takes, as upstream's controller does.
        """
        self.address = address.rstrip("/")
        self._pool = HttpPool(self.address, uds=uds, max_connections=max_connections, read_timeout_s=read_timeout_s)

    async def start_sample(self, session_id: int, index: int | str, custom_task: dict[str, Any] | None) -> Any:
        """Start a session on the worker; the answer is the flat first observation."""
        return await self._post("start_sample", worker_start_sample_request(session_id, index, custom_task))

    async def interact(self, session_id: int, messages: list[dict[str, Any]]) -> Any:
        """Send the agent's messages; the answer is ``{"session_id": N, "env_out": {...}}``."""
        return await self._post("interact", worker_interact_request(session_id, messages))

    async def cancel(self, session_id: int) -> Any:
        """Stop a session and wait until the worker has released it."""
        return await self._post("cancel", cancel_body(session_id))

    async def get_indices(self) -> list[int | str]:
        """The worker's sample indices."""
        return await self._request("GET", "get_indices")

    async def worker_status(self) -> Any:
        """``{"concurrency": C, "current": N}``."""
        return await self._request("GET", "worker_status")

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._pool.aclose()

    async def _post(self, path: str, body: Mapping[str, Any]) -> Any:
        return await self._request("POST", path, _ENCODE(body).encode())

    async def _request(self, method: str, path: str, body: bytes | None = None) -> Any:
        try:
            response = await self._pool.request(method, path, body)
        except (TimeoutError, OSError) as e:  # ConnectionError is an OSError
            raise WorkerError(f"worker {self.address} unreachable on {path}: {type(e).__name__}: {e}") from e
        text = response.body.decode("utf-8", errors="replace")
        if response.status != 200:
            raise WorkerError(
                f"worker {self.address} answered {response.status} on {path}: {_detail(text)}",
                status_code=response.status,
            )
        try:
            return json.loads(response.body)
        except ValueError as e:
            raise WorkerError(f"worker {self.address} sent invalid JSON on {path}: {e}") from e


def _detail(text: str) -> str:
    try:
        data = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(data, dict):
        return str(data.get("detail") or data.get("error") or data)[:500]
    return str(data)[:500]
