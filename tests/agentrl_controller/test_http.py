"""The controller's keep-alive HTTP client for its worker hop, against small real servers (Unix socket and TCP)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from agentrl_controller.errors import WorkerError
from agentrl_controller.http.client import HttpPool
from agentrl_controller.workers.client import WorkerClient

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    head = await reader.readuntil(b"\r\n\r\n") if not reader.at_eof() else b""
    if not head:
        return None
    line, *lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines if x)}
    body = await reader.readexactly(int(headers.get("content-length", 0)))
    return line, headers, body


def _answer(status: int, payload: object, *, close: bool = False) -> bytes:
    body = json.dumps(payload).encode()
    extra = "Connection: close\r\n" if close else ""
    return f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


@asynccontextmanager
async def echo_server(tmp_path: Path, *, unix: bool = True) -> AsyncIterator[tuple[str, str | None, list[int]]]:
    """Answers every request with its method, path, headers and body; yields (URL, socket, connections seen)."""
    connections: list[int] = []
    handlers: set[asyncio.Task[object]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            while (request := await _read_request(reader)) is not None:
                line, headers, body = request
                payload = {"line": line, "headers": headers, "body": body.decode(), "connection": len(connections)}
                if line.startswith("POST /api/close"):
                    writer.write(_answer(200, payload, close=True))
                    await writer.drain()
                    break
                if line.startswith("POST /api/hang"):
                    await asyncio.sleep(3600)
                if line.startswith("POST /api/drop"):
                    break
                writer.write(_answer(404 if "missing" in line else 200, payload))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    if unix:
        path = str(tmp_path / "w.sock")
        server = await asyncio.start_unix_server(handle, path)
        url, uds = "http://worker/api", path
    else:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        url, uds = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/api", None
    try:
        yield url, uds, connections
    finally:
        server.close()
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()


@pytest.mark.parametrize("unix", [True, False], ids=["unix", "tcp"])
async def test_requests_reuse_one_keep_alive_connection(tmp_path: Path, unix: bool) -> None:
    async with echo_server(tmp_path, unix=unix) as (url, uds, connections):
        pool = HttpPool(url, uds=uds)
        first = await pool.request("POST", "interact", b'{"a": 1}', headers={"session_id": "7"})
        second = await pool.request("GET", "worker_status")
        await pool.aclose()
    assert first.status == 200 and second.status == 200
    sent = json.loads(first.body)
    assert sent["line"] == "POST /api/interact HTTP/1.1" and sent["body"] == '{"a": 1}'
    assert sent["headers"]["session_id"] == "7" and sent["headers"]["content-type"] == "application/json"
    assert json.loads(second.body)["line"] == "GET /api/worker_status HTTP/1.1"
    assert len(connections) == 1


async def test_concurrent_requests_open_connections_up_to_the_limit(tmp_path: Path) -> None:
    async with echo_server(tmp_path) as (url, uds, connections):
        pool = HttpPool(url, uds=uds, max_connections=3)
        answers = await asyncio.gather(*(pool.request("GET", f"n{i}") for i in range(20)))
        await pool.aclose()
    assert sorted(json.loads(a.body)["line"] for a in answers) == sorted(f"GET /api/n{i} HTTP/1.1" for i in range(20))
    assert 1 <= len(connections) <= 3


async def test_a_connection_the_server_closes_is_not_reused(tmp_path: Path) -> None:
    async with echo_server(tmp_path) as (url, uds, connections):
        pool = HttpPool(url, uds=uds)
        assert (await pool.request("POST", "close", b"{}")).status == 200
        assert (await pool.request("POST", "again", b"{}")).status == 200
        await pool.aclose()
    assert len(connections) == 2


async def test_failures_become_worker_errors_with_or_without_a_status(tmp_path: Path) -> None:
    async with echo_server(tmp_path) as (url, uds, _):
        client = WorkerClient(url, uds=uds, read_timeout_s=0.2)
        with pytest.raises(WorkerError) as refused:
            await client._request("GET", "missing")
        assert refused.value.status_code == 404
        with pytest.raises(WorkerError, match="unreachable on drop") as dropped:
            await client._post("drop", {})
        assert dropped.value.status_code is None
        with pytest.raises(WorkerError, match="TimeoutError") as hung:
            await client._post("hang", {})
        assert hung.value.status_code is None
        assert (await client.worker_status())["line"] == "GET /api/worker_status HTTP/1.1"  # the pool still works
        await client.aclose()
    with pytest.raises(WorkerError, match="unreachable"):
        await WorkerClient(url, uds=str(tmp_path / "nobody.sock")).worker_status()


async def test_a_cancelled_request_closes_its_connection(tmp_path: Path) -> None:
    async with echo_server(tmp_path) as (url, uds, connections):
        pool = HttpPool(url, uds=uds)
        hung = asyncio.ensure_future(pool.request("POST", "hang", b"{}"))
        while not connections:
            await asyncio.sleep(0.01)
        hung.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hung
        assert (await pool.request("GET", "after")).status == 200  # on a new connection: the old one is unusable
        await pool.aclose()
    assert len(connections) == 2


@pytest.mark.parametrize("address", ["ftp://host/api", "http:///api", "http://host:99999/api", "worker"])
def test_bad_addresses_are_refused(address: str) -> None:
    with pytest.raises(ValueError, match="http"):
        HttpPool(address)
