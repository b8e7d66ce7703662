"""A small HTTP/1.1 client for the controller's hop to its workers: pooled keep-alive connections, nothing else.

Every interact crosses this hop, and a general client's per-request machinery (aiohttp's request and response
objects, connector bookkeeping, payload classes, tracing hooks) cost more CPU than the request itself: aiohttp
took ~28% of the controller's CPU per no-op interact, httpx more (its pool stalled with tens of requests in
flight). The worker API needs only JSON bodies with a ``Content-Length``, keep-alive, and one request at a time
per connection, so this client writes the request in one ``write`` and parses the answer with ``httptools``
(uvicorn's parser, already a dependency). It speaks to a Unix socket (local workers) or TCP, with TLS for
``https`` addresses. Redirects, proxies, cookies, compression and pipelining are not supported: workers use none.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httptools

__all__ = ["HttpPool", "HttpResponse"]


@dataclass(frozen=True)
class HttpResponse:
    """A complete response."""

    status: int
    body: bytes


class _Connection(asyncio.Protocol):
    """One keep-alive connection; at most one request in flight."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[HttpResponse] | None = None
        self.chunks: list[bytes] = []
        self.reusable = False
        self.closed = False

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # pyright: ignore[reportAttributeAccessIssue]  # uvloop's do not subclass asyncio's

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as e:
            self._fail(ConnectionError(f"invalid HTTP response: {e}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ConnectionError(f"connection closed by the worker{f': {exc}' if exc else ''}"))

    # httptools callbacks
    def on_message_begin(self) -> None:
        self.chunks = []

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.reusable = self.parser.should_keep_alive()
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(HttpResponse(self.parser.get_status_code(), b"".join(self.chunks)))
        self.chunks = []

    # ours
    def send(self, request: bytes) -> asyncio.Future[HttpResponse]:
        assert self.transport is not None and self.waiter is None
        self.waiter = asyncio.get_running_loop().create_future()
        self.reusable = False
        self.transport.write(request)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, error: Exception) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)
        self.close()


class HttpPool:
    """Keep-alive connections to one server (a Unix socket or ``host:port``), at most ``max_connections`` at once."""

    def __init__(
        self,
        base_url: str,
        *,
        uds: str | None = None,
        max_connections: int = 256,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float | None = None,
    ) -> None:
        """Prepare the pool; connections open on demand, inside the running event loop.

        Args:
            base_url: ``http(s)://host[:port]/prefix``; request paths are appended to it.
            uds: Connect to this Unix socket instead of the URL's host and port (the URL still names the host).
            max_connections: Requests beyond this many in flight wait for a connection.
            connect_timeout_s: Limit on opening a connection.
            read_timeout_s: Limit on waiting for an answer; ``None`` waits as long as the server takes.
        """
        url = urlsplit(base_url)
        try:
            port = url.port
        except ValueError:
            port = -1
        if url.scheme not in ("http", "https") or not url.hostname or port == -1:
            raise ValueError(f"Worker address must be an http(s) URL with a host and a valid port, got {base_url!r}.")
        self._host = url.hostname
        self._port = port or (443 if url.scheme == "https" else 80)
        self._tls = url.scheme == "https"
        self._uds = uds
        self._prefix = url.path.rstrip("/")
        host_header = url.netloc.rsplit("@", 1)[-1]
        self._head = f"Host: {host_header}\r\nUser-Agent: agentrl-controller\r\n"
        self._idle: list[_Connection] = []
        self._slots = asyncio.Semaphore(max_connections)
        self._connect_timeout_s = connect_timeout_s
        self._read_timeout_s = read_timeout_s
        self._closed = False

    async def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> HttpResponse:
        """Send one request (a JSON ``body`` for POST, extra ``headers``) and read the whole answer.

        Raises:
            ConnectionError: The connection failed or closed before the answer was complete.
            TimeoutError: Connecting or waiting for the answer took longer than allowed.
        """
        head = f"{method} {self._prefix}/{path} HTTP/1.1\r\n{self._head}"
        if headers:
            head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        if body is None:
            data = (head + "\r\n").encode()
        else:
            data = f"{head}Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
        async with self._slots:
            connection = self._take()
            if connection is None:
                connection = await self._connect()
            try:
                waiter = connection.send(data)
                if self._read_timeout_s is None:
                    response = await waiter
                else:
                    async with asyncio.timeout(self._read_timeout_s):
                        response = await waiter
            except BaseException:
                connection.close()  # cancelled or failed mid-request: the connection's state is unknown
                raise
            if connection.reusable and not connection.closed and not self._closed:
                self._idle.append(connection)
            else:
                connection.close()
            return response

    async def aclose(self) -> None:
        """Close every idle connection; connections in use close when their request ends."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _take(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()  # the most recently used: least likely to have timed out
            if not connection.closed:
                return connection
        return None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self._connect_timeout_s):
            if self._uds is not None:
                _, protocol = await loop.create_unix_connection(_Connection, self._uds)
            else:
                tls: Any = ssl.create_default_context() if self._tls else None
                _, protocol = await loop.create_connection(_Connection, self._host, self._port, ssl=tls)
        return protocol  # asyncio and uvloop set TCP_NODELAY on TCP connections themselves
