"""A small OpenAI-compatible chat-completions server for tests, on 127.0.0.1 in a thread (stdlib http.server).

By default it plays the toy task well: it echoes once, then answers the sample's number with real
``tool_calls``; a model whose name starts with ``bad`` answers a wrong number. :meth:`FakeOpenAIServer.script`
queues canned replies for the next requests (a 429 with ``Retry-After``, a malformed body, a context-limit
400...). With ``models`` set it also serves ``GET /v1/models``; every reply reports token usage.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .toy_task import call, sample_index


@dataclass
class Canned:
    """One scripted reply."""

    status: int = 200
    body: str = ""
    headers: dict[str, str] = field(default_factory=dict)


class FakeOpenAIServer:
    """Serves ``POST /v1/chat/completions``; records every request body and header."""

    def __init__(self, models: list[str] | None = None, *, delay_s: float = 0.0) -> None:
        self.models = models
        self.delay_s = delay_s
        """Seconds each completion takes (to interrupt a run midway)."""
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._script: list[Canned] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def script(self, *replies: Canned) -> None:
        """Answer the next requests with ``replies``, in order, before going back to playing."""
        with self._lock:
            self._script.extend(replies)

    def _next(self, body: dict[str, Any]) -> Canned:
        with self._lock:
            if self._script:
                return self._script.pop(0)
        model = body.get("model", "")
        return Canned(body=json.dumps(completion(reply_to(body["messages"], model), model, len(body["messages"]))))

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                if server.models is None or self.path != "/v1/models":
                    self.send_error(404)
                    return
                payload = json.dumps({"object": "list", "data": [{"id": m} for m in server.models]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                time.sleep(server.delay_s)
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                if self.path != "/v1/chat/completions":
                    canned = Canned(404, json.dumps({"error": {"message": f"no route {self.path}"}}))
                elif server.models is not None and body.get("model") not in server.models:  # as vLLM answers
                    canned = Canned(
                        404, json.dumps({"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                    )
                else:
                    canned = server._next(body)
                payload = canned.body.encode()
                self.send_response(canned.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

        return Handler


def reply_to(messages: list[dict[str, Any]], model: str = "") -> dict[str, Any]:
    """Echo first, then answer the sample's number (what a good model does on the toy task; a ``bad`` one errs)."""
    if messages[-1]["role"] == "tool":
        wrong = 1 if model.startswith("bad") else 0
        return call("answer", call_id="call_2", value=sample_index(messages) + wrong)
    return call("echo", call_id="call_1", text="hello")


def completion(message: dict[str, Any], model: str, prompt_tokens: int = 1) -> dict[str, Any]:
    """A chat-completions response body around ``message``; usage: one prompt token per message, 3 completion."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 3, "total_tokens": prompt_tokens + 3},
    }
