"""uvicorn's httptools server, with each HTTP response handed to the socket in one write.

uvicorn writes a response's status line and headers with one ``transport.write`` and its body with another: two
``send`` syscalls for a small JSON answer and, over TCP, two segments that wake the client twice. On a no-op
``interact`` those writes were the largest cost left in the controller's CPU (docs/benchmarks.md, "Controller
ceilings"). :class:`OneWriteHttpProtocol` is uvicorn's ``HttpToolsProtocol`` behind a transport that holds what the
protocol writes and passes it on in one write when the response is complete. Anything that does not complete in
the same pass of the event loop (a streamed body, a ``100 Continue``, a head whose body comes later) leaves at the
end of that pass, and everything held leaves before a close. The bytes on the wire are the same, in the same order;
only how they are cut into writes changes.

Use it with uvicorn's public ``http`` option: ``uvicorn.Config(app, http=OneWriteHttpProtocol, ...)``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["HeldWrites", "OneWriteHttpProtocol"]


class HeldWrites(asyncio.Transport):
    """A transport that holds writes until :meth:`flush`, the end of the loop's current pass, or a close.

    Every other call goes to the wrapped transport unchanged (explicitly, method by method, so that what is held
    and what is not stays visible here).
    """

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        """Wrap ``transport``, whose protocol runs on ``loop``."""
        super().__init__()
        self._transport = transport
        self._loop = loop
        self._held: list[bytes] = []

    # --- held writes

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Hold ``data``; the first held write of a pass schedules the flush at the pass's end."""
        if not data:
            return  # the wrapped transport ignores empty writes too
        if not self._held:
            self._loop.call_soon(self.flush)
        self._held.append(bytes(data))

    def writelines(self, list_of_data: Any) -> None:
        """Hold each piece, as :meth:`write` does."""
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Pass everything held to the wrapped transport in one write (dropped if it is closing: the peer is gone)."""
        held = self._held
        if not held:
            return
        self._held = []
        if not self._transport.is_closing():
            self._transport.write(held[0] if len(held) == 1 else b"".join(held))

    def close(self) -> None:
        """Flush, then close."""
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        """Flush, then half-close."""
        self.flush()
        self._transport.write_eof()

    def abort(self) -> None:
        """Drop what is held, as an abort drops the wrapped transport's buffer, and abort."""
        self._held = []
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        """The wrapped transport's buffer plus what is held here."""
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._held)

    # --- passed through

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """As the wrapped transport."""
        return self._transport.get_extra_info(name, default)

    def is_closing(self) -> bool:
        """As the wrapped transport."""
        return self._transport.is_closing()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        """As the wrapped transport."""
        self._transport.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        """As the wrapped transport."""
        return self._transport.get_protocol()

    def is_reading(self) -> bool:
        """As the wrapped transport."""
        return self._transport.is_reading()

    def pause_reading(self) -> None:
        """As the wrapped transport."""
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        """As the wrapped transport."""
        self._transport.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """As the wrapped transport."""
        self._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        """As the wrapped transport."""
        return self._transport.get_write_buffer_limits()

    def can_write_eof(self) -> bool:
        """As the wrapped transport."""
        return self._transport.can_write_eof()


class OneWriteHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol whose responses each leave in one socket write."""

    def connection_made(self, transport: asyncio.Transport) -> None:
        """Serve the connection through a :class:`HeldWrites` wrapper of ``transport``."""
        self.held = HeldWrites(transport, self.loop)
        super().connection_made(self.held)

    def on_response_complete(self) -> None:
        """The response's last byte is written: send it all now, then let uvicorn go on (keep-alive, pipeline)."""
        self.held.flush()
        super().on_response_complete()
