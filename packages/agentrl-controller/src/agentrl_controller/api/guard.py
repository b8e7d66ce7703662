"""ASGI middleware in front of every route: bearer token, request body limit, and error/latency metrics.

Written as plain ASGI (not ``BaseHTTPMiddleware``) because it sits on the hot path of every interact.
"""

from __future__ import annotations

import hmac
import json
import time
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentrl_controller.metrics import ControllerMetrics

__all__ = ["Guard"]


def _too_large(limit: int) -> HTTPException:
    # an HTTPException, because FastAPI turns any other error raised while it reads a body into a 400
    return HTTPException(413, f"Request body exceeds the limit of {limit} bytes.")


class Guard:
    """Checks the token and the body size, and records latency per route and errors per code."""

    def __init__(self, app: ASGIApp, *, token: str | None, max_body_bytes: int, metrics: ControllerMetrics) -> None:
        """Wrap ``app``; ``token=None`` disables the token check (loopback binds only)."""
        self.app = app
        self.expected = f"Bearer {token}".encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self._latency: dict[str, Any] = {}
        """The latency histogram per route, its label bound (``labels`` takes a lock and builds a key)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        public = scope["method"] == "GET" and scope["path"] == "/"  # the dashboard's static page holds no data
        if self.expected is not None and not public and not self._authorized(scope):
            await _error(send, 401, "Missing or wrong bearer token: send 'Authorization: Bearer <token>'.", self)
            return
        length = _content_length(scope)
        if length is not None and length > self.max_body_bytes:
            await _error(send, 413, f"Request body of {length} bytes exceeds the limit of {self.max_body_bytes}.", self)
            return
        await self._call(scope, receive, send)

    async def _call(self, scope: Scope, receive: Receive, send: Send) -> None:
        seen = 0
        started = False
        limit = self.max_body_bytes

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _too_large(limit)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if message["status"] >= 400:
                    self.metrics.errors.labels(str(message["status"])).inc()
            await send(message)

        begin = time.perf_counter()
        try:
            await self.app(scope, counted_receive, tracked_send)
        except HTTPException as e:
            if e.status_code != 413 or started:
                raise
            await _error(send, 413, str(e.detail), self)
        finally:
            route = scope.get("route")
            path = getattr(route, "path", None) or "unmatched"
            histogram = self._latency.get(path)
            if histogram is None:
                histogram = self._latency[path] = self.metrics.request_latency.labels(path)
            histogram.observe(time.perf_counter() - begin)

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                return hmac.compare_digest(value, self.expected or b"")
        return False


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _error(send: Send, status: int, message: str, guard: Any) -> None:
    guard.metrics.errors.labels(str(status)).inc()
    body = json.dumps({"error": message, "detail": None}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
