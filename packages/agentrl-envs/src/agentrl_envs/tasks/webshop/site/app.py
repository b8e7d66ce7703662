"""The WSGI app that serves the shop, one :class:`ShopSession` per visitor, and a threaded server for it.

Routes (all on 127.0.0.1 by default):

- ``GET /``: pick a split and goal; ``GET /new?split=test&goal=3`` opens a session and redirects to it.
- ``GET /s/<id>``: the session's current page; ``POST /s/<id>/search`` (``keywords``) and
  ``POST /s/<id>/click`` (``value``) act as ``search[...]``/``click[...]`` and redirect back (post/redirect/get),
  with why an action did nothing shown once as a notice.
- ``GET /s/<id>/state.json``: the text observation, available actions, and the reward once bought.

Sessions live in memory; the oldest are dropped past ``max_sessions``.
"""

from __future__ import annotations

import json
import logging
import random
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from html import escape
from socketserver import ThreadingMixIn
from typing import Any
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from agentrl_envs.core.errors import DataError
from agentrl_envs.tasks.webshop.catalogue import Catalogue
from agentrl_envs.tasks.webshop.goals import SPLIT_RANGES
from agentrl_envs.tasks.webshop.shop import ShopSession
from agentrl_envs.tasks.webshop.site.html import document, render_page

__all__ = ["MAX_BODY_BYTES", "ShopSite", "serve"]

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20
"""Largest form post accepted (a 100 KB search fits; anything bigger is refused with 413)."""

StartResponse = Callable[[str, list[tuple[str, str]]], Any]


@dataclass
class _Visit:
    shop: ShopSession
    split: str
    goal_index: int
    notice: str = ""


class _Reply(Exception):
    """Raised by a route to answer with an error page."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ShopSite:
    """The WSGI application (see the module docstring)."""

    def __init__(self, catalogue: Catalogue, *, show_attrs: bool = False, max_sessions: int = 1000) -> None:
        """Serve ``catalogue`` (loaded with its search index).

        Args:
            catalogue: Products, goals and search index the sessions shop in.
            show_attrs: Show the Attributes sub-page button (upstream's ``show_attrs``).
            max_sessions: Sessions kept in memory; the least recently used are dropped past this.
        """
        self.catalogue = catalogue
        self.show_attrs = show_attrs
        self.max_sessions = max_sessions
        self._visits: OrderedDict[str, _Visit] = OrderedDict()
        # One lock for all sessions: a request is a few milliseconds and ShopSession is not thread-safe.
        self._lock = threading.Lock()

    def session(self, session_id: str) -> ShopSession:
        """The shop session behind ``/s/<session_id>`` (raises ``KeyError`` if there is none)."""
        return self._visits[session_id].shop

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        """Answer one request."""
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "/") or "/"
        try:
            with self._lock:
                status, headers, body = self._route(method, path, environ)
        except _Reply as reply:
            status, headers = reply.status, [("Content-Type", "text/html; charset=utf-8")]
            body = document("WebShop", '<p><a href="/">Start over</a></p>', notice=reply.message).encode()
        start_response(status, [*headers, ("Content-Length", str(len(body))), ("Cache-Control", "no-store")])
        return [body]

    # ----------------------------------------------------------------- routes

    def _route(self, method: str, path: str, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
        parts = [p for p in path.split("/") if p]
        if method == "GET" and not parts:
            return _html(self._home())
        if method == "GET" and parts == ["new"]:
            return _redirect(self._new(_query(environ)))
        if len(parts) >= 2 and parts[0] == "s":
            session_id, rest = parts[1], parts[2:]
            visit = self._visit(session_id)
            base = f"/s/{session_id}"
            if method == "GET" and not rest:
                notice, visit.notice = visit.notice, ""
                return _html(render_page(visit.shop.page, base, notice=notice))
            if method == "GET" and rest == ["state.json"]:
                return _json(self._state(visit))
            if method == "POST" and rest in (["search"], ["click"]):
                form = _form(environ)
                if rest == ["search"]:
                    action = f"search[{form.get('keywords', '')}]"
                else:
                    action = f"click[{form.get('value', '')}]"
                result = visit.shop.step(action)
                visit.notice = result.problem
                return _redirect(base)
        if method not in ("GET", "POST"):
            raise _Reply("405 Method Not Allowed", f"{method} is not supported; the shop takes GET and POST.")
        raise _Reply("404 Not Found", f"There is no page at {path[:200]!r}.")

    def _home(self) -> str:
        splits = [s for s, (start, _) in SPLIT_RANGES.items() if start < len(self.catalogue.goals)]
        choices = "".join(
            f'<option value="{s}">{s} ({len(self.catalogue.split_goals(s))} goals)</option>' for s in splits
        )
        body = (
            f"<h1>WebShop</h1><p>{len(self.catalogue.products)} products ({self.catalogue.source} catalogue). "
            "Pick a goal and shop for it; the score is shown after Buy Now.</p>"
            '<form method="get" action="/new"><label>Split <select name="split">'
            f"{choices}</select></label> "
            '<label>Goal <input name="goal" type="number" min="0" placeholder="random"></label> '
            '<button type="submit">Start shopping</button></form>'
        )
        return document("WebShop", body)

    def _new(self, query: dict[str, str]) -> str:
        split = query.get("split", "test")
        if split not in SPLIT_RANGES:
            raise _Reply("400 Bad Request", f"Unknown split {split!r}; choose one of {', '.join(SPLIT_RANGES)}.")
        try:
            indices = self.catalogue.split_goals(split)
        except DataError as e:  # a small generated catalogue may not reach the split's goal range
            raise _Reply("400 Bad Request", str(e)) from None
        raw = query.get("goal", "")
        if raw == "":
            goal_index = random.randrange(len(indices))
        elif raw.isdigit() and int(raw) < len(indices):
            goal_index = int(raw)
        else:
            raise _Reply("400 Bad Request", f"goal must be a number from 0 to {len(indices) - 1} for split {split!r}.")
        shop = ShopSession(self.catalogue, self.catalogue.goals[indices[goal_index]], show_attrs=self.show_attrs)
        session_id = secrets.token_urlsafe(9)
        self._visits[session_id] = _Visit(shop, split, goal_index)
        while len(self._visits) > self.max_sessions:
            self._visits.popitem(last=False)
        return f"/s/{session_id}"

    def _visit(self, session_id: str) -> _Visit:
        visit = self._visits.get(session_id)
        if visit is None:
            raise _Reply("404 Not Found", "This shopping session does not exist (or has expired); start a new one.")
        self._visits.move_to_end(session_id)
        return visit

    def _state(self, visit: _Visit) -> dict[str, Any]:
        shop = visit.shop
        return {
            "split": visit.split,
            "goal": visit.goal_index,
            "instruction": shop.goal.instruction_text,
            "page": shop.page.kind,
            "observation": shop.observation,
            "available_actions": shop.available_actions(),
            "options": shop.options,
            "done": shop.done,
            "reward": shop.reward.reward if shop.reward else None,
            "reward_info": asdict(shop.reward) if shop.reward else None,
            "purchased_asin": shop.purchased.asin if shop.purchased else None,
        }


# --------------------------------------------------------------------- request and response helpers


def _query(environ: dict[str, Any]) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True).items()}


def _form(environ: dict[str, Any]) -> dict[str, str]:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise _Reply("400 Bad Request", "The request's Content-Length is not a number.") from None
    if length > MAX_BODY_BYTES:
        raise _Reply("413 Content Too Large", f"The form is {length} bytes; the shop takes up to {MAX_BODY_BYTES}.")
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    fields = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    return {k: v[0] for k, v in fields.items()}


def _html(text: str) -> tuple[str, list[tuple[str, str]], bytes]:
    return "200 OK", [("Content-Type", "text/html; charset=utf-8")], text.encode()


def _json(data: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
    return "200 OK", [("Content-Type", "application/json")], json.dumps(data).encode()


def _redirect(location: str) -> tuple[str, list[tuple[str, str]], bytes]:
    body = f'<a href="{escape(location)}">continue</a>'.encode()
    return "303 See Other", [("Location", location), ("Content-Type", "text/html; charset=utf-8")], body


# --------------------------------------------------------------------- server


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        logger.debug("%s %s", self.address_string(), format % args)


def serve(site: ShopSite, host: str = "127.0.0.1", port: int = 3000) -> WSGIServer:
    """A threaded HTTP server for ``site`` bound to ``host:port`` (port 0: any free port).

    Call its ``serve_forever()`` to run it and ``shutdown()`` then ``server_close()`` to stop it.
    """
    return make_server(host, port, site, server_class=_ThreadingServer, handler_class=_QuietHandler)
