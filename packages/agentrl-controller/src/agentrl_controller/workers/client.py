"""HTTP client for one worker, speaking the worker side of the AgentRL API (as ``agentrl-worker`` serves it).

Local workers listen on a Unix socket, remote ones on TCP; both are the same API. Transport failures and
error answers become :class:`~agentrl_controller.errors.WorkerError` with the worker's status code, so the
caller can tell "the worker refused" (a code) from "the worker is gone" (none).

This hop uses aiohttp rather than httpx (which the rest of the project uses): every interact passes through it,
and httpx's connection pool stalls with tens of requests in flight (measured in ``bench/controller_load.py``:
a few hundred requests/s and multi-second p99 where aiohttp sustains thousands).
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp

from agentrl_controller.errors import WorkerError

__all__ = ["WorkerClient"]


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
        self._uds = uds
        self._max_connections = max_connections
        self._timeout = aiohttp.ClientTimeout(total=None, sock_connect=5.0, sock_read=read_timeout_s)
        self._session: aiohttp.ClientSession | None = None

    async def start_sample(self, session_id: int, index: int | str, custom_task: dict[str, Any] | None) -> Any:
        """Start a session on the worker; the answer is the flat first observation."""
        body = {"index": index, "custom_task": custom_task, "session_id": session_id}
        return await self._post("start_sample", body)

    async def interact(self, session_id: int, messages: list[dict[str, Any]]) -> Any:
        """Send the agent's messages; the answer is ``{"session_id": N, "env_out": {...}}``."""
        return await self._post("interact", {"session_id": session_id, "messages": messages})

    async def cancel(self, session_id: int) -> Any:
        """Stop a session and wait until the worker has released it."""
        return await self._post("cancel", {"session_id": session_id})

    async def get_indices(self) -> list[int | str]:
        """The worker's sample indices."""
        return await self._request("GET", "get_indices")

    async def worker_status(self) -> Any:
        """``{"concurrency": C, "current": N}``."""
        return await self._request("GET", "worker_status")

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        return await self._request("POST", path, json=body)

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            if self._uds:
                connector: aiohttp.BaseConnector = aiohttp.UnixConnector(path=self._uds, limit=self._max_connections)
            else:
                connector = aiohttp.TCPConnector(limit=self._max_connections, limit_per_host=self._max_connections)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout, trust_env=False)
        return self._session

    async def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        url = f"{self.address}/{path}"
        try:
            async with self._open().request(method, url, **kwargs) as response:
                text = await response.text()
                status = response.status
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as e:
            raise WorkerError(f"worker {self.address} unreachable on {path}: {type(e).__name__}: {e}") from e
        if status != 200:
            raise WorkerError(f"worker {self.address} answered {status} on {path}: {_detail(text)}", status_code=status)
        try:
            return json.loads(text)
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
