"""One socket write per HTTP response (``agentrl_controller.http.onewrite``), and the server processes' GC settings.

Real uvicorn servers on loopback TCP, driven by a plain blocking socket; the number of TCP data segments that
reach the client is read from the kernel (``TCP_INFO``), so nothing in the server is patched or spied on. Each
check runs against uvicorn's own httptools protocol too: it must send the same bytes, and (for the segment count)
two segments per response, which shows the count can tell the two apart.
"""

from __future__ import annotations

import asyncio
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from agentrl_controller.http.onewrite import OneWriteHttpProtocol

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads TCP_INFO, a Linux socket option")

_TCPI_DATA_SEGS_IN = 152
"""Offset of ``tcpi_data_segs_in`` in Linux's ``struct tcp_info`` (since 4.6)."""


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """A small ASGI app: a JSON answer sent at once, a body streamed over later passes of the loop, a 404."""
    if scope["type"] != "http":
        return
    body = b""
    while True:  # read the whole body (a 100-continue request gets its interim answer here)
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    if scope["path"] == "/stream":
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
        for part in (b"one ", b"two ", b"three"):
            await asyncio.sleep(0.01)
            await send({"type": "http.response.body", "body": part, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        return
    status = 404 if scope["path"] == "/missing" else 200
    payload = b'{"path":"%s","got":%d}' % (scope["path"].encode(), len(body))
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


@contextmanager
def server(protocol: type[asyncio.Protocol], loop: str) -> Iterator[tuple[str, int]]:
    """A uvicorn server with ``protocol`` on ``loop``, in a thread, on a free loopback port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, http=protocol, loop=loop, lifespan="off", log_level="warning", access_log=False)
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not instance.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the test server did not start"
            time.sleep(0.01)
        yield sock.getsockname()
    finally:
        instance.should_exit = True
        thread.join(10)
        sock.close()


def exchange(address: tuple[str, int], *requests: bytes, pause_s: float = 0.0) -> tuple[bytes, int]:
    """Send ``requests`` on one connection (``pause_s`` apart), read until the server closes it.

    Returns the bytes received and the number of TCP data segments they came in.
    """
    with socket.create_connection(address, timeout=10) as client:
        for request in requests:
            client.sendall(request)
            time.sleep(pause_s)
        received = b""
        while chunk := client.recv(65536):
            received += chunk
        info = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return received, struct.unpack_from("I", info, _TCPI_DATA_SEGS_IN)[0]


def _same_date(raw: bytes) -> bytes:
    return re.sub(rb"date: [^\r]*\r\n", b"date: X\r\n", raw)


def _post(path: str, body: bytes = b"{}", *, close: bool = False, extra: str = "") -> bytes:
    connection = "Connection: close\r\n" if close else ""
    head = f"POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {len(body)}\r\n{connection}{extra}\r\n"
    return head.encode() + body


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_each_response_is_one_tcp_segment_and_the_bytes_are_uvicorn_s_own(loop: str) -> None:
    pytest.importorskip(loop)
    cases = {
        # five keep-alive requests, one after the other: one segment per response (uvicorn's: head, then body)
        "sequential": ([_post("/a"), _post("/b"), _post("/missing"), _post("/c"), _post("/d", close=True)], 0.05),
        # two requests in one packet: the second answer waits for the first, each still one write
        "pipelined": ([_post("/a") + _post("/b", close=True)], 0.0),
        "head": ([b"HEAD /a HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"], 0.0),
    }
    seen: dict[str, dict[str, tuple[bytes, int]]] = {}
    for name, protocol in (("ours", OneWriteHttpProtocol), ("uvicorn", HttpToolsProtocol)):
        with server(protocol, loop) as address:
            seen[name] = {case: exchange(address, *sent, pause_s=pause) for case, (sent, pause) in cases.items()}
    for case in cases:
        ours, theirs = seen["ours"][case], seen["uvicorn"][case]
        assert _same_date(ours[0]) == _same_date(theirs[0]), case
    assert seen["ours"]["sequential"][1] == 5
    assert seen["uvicorn"]["sequential"][1] == 10  # the count sees uvicorn's split, so 5 above means one write each
    assert seen["ours"]["pipelined"][1] <= 2
    assert seen["ours"]["head"][1] == 1
    assert seen["ours"]["sequential"][0].count(b"HTTP/1.1 404 Not Found") == 1


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_streamed_bodies_and_100_continue_are_not_held_back(loop: str) -> None:
    """What does not complete in one pass of the event loop leaves at the end of that pass, never later."""
    pytest.importorskip(loop)
    with server(OneWriteHttpProtocol, loop) as address:
        # a streamed body, in parts 10 ms apart: each part leaves on its own, as it is sent
        streamed, segments = exchange(address, _post("/stream", close=True))
        assert b"transfer-encoding: chunked" in streamed and streamed.endswith(b"5\r\nthree\r\n0\r\n\r\n")
        assert segments >= 4
        # a client that waits for "100 Continue" before sending its body gets it (held, it would wait forever)
        with socket.create_connection(address, timeout=10) as client:
            client.sendall(_post("/upload", b"", extra="Expect: 100-continue\r\n").replace(b"Length: 0", b"Length: 5"))
            assert client.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
            client.sendall(b"hello")
            answer = client.recv(65536)
        assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b'{"path":"/upload","got":5}')


def test_settle_heap_freezes_startup_objects_and_still_collects_cycles() -> None:
    """In a fresh interpreter (the GC settings are process-wide): thresholds set, startup frozen, cycles reclaimed."""
    code = """
import gc, weakref
from agentrl_controller.gc_tuning import GC_THRESHOLDS, settle_heap

class Node:
    pass

settle_heap()
assert gc.get_threshold() == GC_THRESHOLDS, gc.get_threshold()
assert gc.get_freeze_count() > 1_000, gc.get_freeze_count()  # the imported modules, at least
a, b = Node(), Node()
a.other, b.other = b, a
gone = weakref.ref(a)
del a, b
gc.collect()
assert gone() is None
print("ok")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
