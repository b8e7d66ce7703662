"""A fast path for one hot JSON route, in front of a full ASGI app (FastAPI or Starlette).

Every ``interact`` passes through the controller and then the worker, and with a no-op env most of their CPU went
to the framework: routing through half a dozen middleware layers, dependency solving, pydantic validation of a
body that is a list of OpenAI messages we pass on untouched. :class:`FastJsonRoute` serves the common, well-formed
request of one route itself (read the body, ``json.loads``, a few type checks, the handler, ``json.dumps``) and
hands everything else to the full app with the body replayed, so malformed requests still get the framework's
exact answers (422 with details, and so on), and the OpenAPI schema still describes the route.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["FastAnswer", "FastJsonRoute", "header", "json_body"]

logger = logging.getLogger(__name__)

FastAnswer = tuple[int, Any, list[tuple[bytes, bytes]]]
"""Status code, JSON payload, extra response headers."""
FastHandler = Callable[[Scope, Any], Awaitable[FastAnswer | None]]
"""Serves a parsed body, or returns ``None`` (before doing anything) to leave the request to the full app."""

_INVALID = object()
_ENCODE = json.JSONEncoder(ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode
"""``json.dumps`` with Starlette's ``JSONResponse`` settings, built once: ``dumps`` with any non-default setting
builds a new encoder per call, which cost as much as encoding a small answer."""


class FastJsonRoute:
    """Serves ``POST path`` with ``handler`` when it accepts the request; everything else goes to ``app``."""

    def __init__(self, app: ASGIApp, *, path: str, handler: FastHandler, route: Any = None) -> None:
        """Wrap ``app``.

        Args:
            app: The full app, which serves every other request and the ones ``handler`` declines.
            path: The route's path.
            handler: Called with the scope and the parsed JSON body.
            route: Put in ``scope["route"]`` for requests served here (what the app's router would have set).
        """
        self.app = app
        self.path = path
        self.handler = handler
        self.route = route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request."""
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST" or not _json(scope):
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive)
        data = json_body(body)
        answer = None if data is _INVALID else await self._handle(scope, data)
        if answer is None:
            await self.app(scope, _replay(body, receive), send)
            return
        if self.route is not None:
            scope["route"] = self.route
        status, payload, headers = answer
        await send_json(send, status, payload, headers)

    async def _handle(self, scope: Scope, data: Any) -> FastAnswer | None:
        try:
            return await self.handler(scope, data)
        except Exception as e:  # a bug, as in the full app's catch-all: log it, answer JSON, keep serving
            logger.error("unhandled error on POST %s", self.path, exc_info=e)
            return 500, {"error": f"Internal error ({type(e).__name__}); see the log.", "detail": None}, []


def json_body(body: bytes) -> Any:
    """The parsed body, or a sentinel that is not valid JSON (left to the full app to answer)."""
    try:
        return json.loads(body)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError
        return _INVALID


def header(scope: Scope, name: bytes) -> str | None:
    """The value of header ``name`` (lower case), ``None`` if absent, or sent more than once (ambiguous)."""
    found = None
    for key, value in scope["headers"]:
        if key == name:
            if found is not None:
                return None
            found = value
    return None if found is None else found.decode("latin-1")


async def send_json(send: Send, status: int, payload: Any, headers: list[tuple[bytes, bytes]]) -> None:
    """Send ``payload`` as Starlette's ``JSONResponse`` renders it (compact, UTF-8, no NaN)."""
    body = _ENCODE(payload).encode()
    raw = [*headers, (b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _json(scope: Scope) -> bool:
    """Whether the body is declared JSON, or not declared at all (what FastAPI parses as JSON)."""
    for key, value in scope["headers"]:
        if key == b"content-type":
            return value.split(b";", 1)[0].strip().lower() == b"application/json"
    return True


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away; the app would see the same
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields the body already read, then whatever the connection says next."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
