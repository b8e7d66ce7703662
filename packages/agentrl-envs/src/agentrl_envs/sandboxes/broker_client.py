"""Leasing sandboxes from a sandbox broker: a :class:`SandboxBackend` whose sandboxes live in another process.

The broker (:mod:`agentrl_envs.sandboxes.broker`) owns one warm :class:`~agentrl_envs.sandboxes.pool.SandboxPool`
for every worker process of a task. :class:`BrokerBackend` opens one Unix-socket connection per leased
sandbox: the first request leases a sandbox of the image, every later request on the connection runs on that
sandbox (the shell command, an independent process, ``settle``), and closing the connection gives the sandbox
back, so the broker closes it (never re-leases it) exactly as the in-process pool does. A worker that dies
drops its connections with it; the broker then gives back what they held. A broker that dies ends every
leased sandbox's connection, and each call on it raises :class:`InfraError` at once, saying so (no hang).

Frames: a 4-byte big-endian length, then a JSON object; bytes travel base64-encoded.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import threading
from typing import Any

from agentrl_envs.core.errors import BackendUnavailableError, InfraError
from agentrl_envs.sandboxes.base import ExecResult, Limits, Sandbox, SandboxBackend, ShellResult
from agentrl_envs.sandboxes.pool import PoolStats
from agentrl_envs.sandboxes.shell import ShellLostError

__all__ = ["BrokerBackend", "BrokerSandbox", "recv_frame", "send_frame"]

_HEADER = struct.Struct(">I")
_MAX_FRAME = 64 * 1024 * 1024
_ANSWER_MARGIN_S = 60.0
"""Time a broker may take beyond a command's own limit before the worker gives up on it (a live but stuck
broker must not hang an episode forever)."""
_ERRORS: dict[str, type[InfraError]] = {
    "InfraError": InfraError,
    "ShellLostError": ShellLostError,
    "BackendUnavailableError": BackendUnavailableError,
}
"""The errors a broker reports by name, raised again here with their class (the OS task tells a shell lost by
the agent's script from other faults by its class)."""


def send_frame(sock: socket.socket, message: dict[str, Any]) -> None:
    """Send one frame."""
    body = json.dumps(message, separators=(",", ":")).encode()
    sock.sendall(_HEADER.pack(len(body)) + body)


def recv_frame(sock: socket.socket) -> dict[str, Any] | None:
    """Receive one frame; ``None`` if the peer closed the connection between frames.

    Raises:
        ConnectionError: If the connection ended inside a frame or the frame is over the size limit.
    """
    header = _recv_exactly(sock, _HEADER.size, allow_eof=True)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > _MAX_FRAME:
        raise ConnectionError(f"sandbox broker frame of {size} bytes is over the {_MAX_FRAME}-byte limit")
    body = _recv_exactly(sock, size, allow_eof=False)
    assert body is not None
    return json.loads(body)


def _recv_exactly(sock: socket.socket, size: int, *, allow_eof: bool) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            if allow_eof and not chunks:
                return None
            raise ConnectionError("the connection ended inside a frame")
        chunks += chunk
    return bytes(chunks)


def encode(data: bytes) -> str:
    """Bytes as frame text."""
    return base64.b64encode(data).decode("ascii")


def decode(text: str) -> bytes:
    """Frame text as bytes."""
    return base64.b64decode(text)


class BrokerSandbox(Sandbox):
    """A sandbox leased from a broker over its own connection; :meth:`close` gives it back."""

    def __init__(self, backend: BrokerBackend, sock: socket.socket, *, image: str, shell_pid: int) -> None:
        """Wrap the connection that holds the lease."""
        self.backend = backend
        self.image = image
        self.limits = backend.limits
        self._sock: socket.socket | None = sock
        self._shell_pid = shell_pid
        self._lock = threading.Lock()

    def run_shell(self, script: str) -> ShellResult:
        """Run ``script`` in the shell (in the broker's sandbox)."""
        answer = self._call({"op": "run_shell", "script": script}, self.limits.command_timeout_s)
        return ShellResult(decode(answer["output"]), timed_out=answer["timed_out"], notes=list(answer["notes"]))

    def exec(self, argv: list[str], *, timeout: float | None = None) -> ExecResult:
        """Run an independent process in the sandbox."""
        answer = self._call({"op": "exec", "argv": argv, "timeout": timeout}, timeout or self.limits.command_timeout_s)
        return ExecResult(
            answer["exit_code"],
            decode(answer["stdout"]),
            decode(answer["stderr"]),
            timed_out=answer["timed_out"],
            oom_kills=answer["oom_kills"],
        )

    def settle(self) -> None:
        """Wait until background processes stop changing."""
        self._call({"op": "settle"}, self.limits.command_timeout_s)

    @property
    def shell_pid(self) -> int:
        """The shell's host pid (the broker's sandboxes run on the same host)."""
        return self._shell_pid

    @property
    def alive(self) -> bool:
        """Whether the shell is running (``False`` once the broker is gone)."""
        try:
            return bool(self._call({"op": "alive"}, 10.0)["alive"])
        except InfraError:
            return False

    def close(self) -> None:
        """Give the sandbox back: the broker closes it in the background (idempotent, returns at once)."""
        with self._lock:
            sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()

    def _call(self, request: dict[str, Any], work_s: float) -> dict[str, Any]:
        with self._lock:
            if self._sock is None:
                raise InfraError(f"The {self.image} sandbox was given back to the broker; lease a new one.")
            return self.backend.exchange(self._sock, request, work_s + _ANSWER_MARGIN_S)


class BrokerBackend(SandboxBackend):
    """Sandboxes leased from the broker listening at ``path`` (see the module docstring)."""

    def __init__(self, path: str, *, name: str, limits: Limits, lease_timeout_s: float | None = None) -> None:
        """Lease from the broker at ``path`` (a Unix socket).

        Args:
            path: The broker's socket.
            name: The name of the broker's backend (``bwrap``, ``docker``).
            limits: The limits of its sandboxes (they bound how long a command may take to answer).
            lease_timeout_s: The broker pool's own lease timeout (a lease is given up a margin after it);
                ``None``: wait as long as the broker takes.
        """
        self.path = path
        self.name = name
        self.limits = limits
        self.lease_timeout_s = lease_timeout_s

    def open(self, image: str) -> BrokerSandbox:
        """Lease a sandbox of ``image`` (waits, like the pool, while the broker's pool is at its maximum).

        Raises:
            InfraError: If no broker answers at the path, it closed the connection, or the lease failed there.
        """
        sock = self._connect()
        try:
            wait_s = None if self.lease_timeout_s is None else self.lease_timeout_s + _ANSWER_MARGIN_S
            answer = self.exchange(sock, {"op": "lease", "image": image}, wait_s)
        except BaseException:
            sock.close()
            raise
        return BrokerSandbox(self, sock, image=image, shell_pid=answer["shell_pid"])

    def stats(self) -> dict[str, PoolStats]:
        """The broker's pool counters per image (the whole pool, shared by every worker of the task)."""
        sock = self._connect()
        try:
            answer = self.exchange(sock, {"op": "stats"}, 10.0)
        finally:
            sock.close()
        return {image: PoolStats(**counters) for image, counters in answer["stats"].items()}

    def _connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
        except OSError as e:
            sock.close()
            raise InfraError(
                f"No sandbox broker answers at {self.path} ({e}); it is started by the controller for a task with "
                "sandbox_pool and several workers, and restarted when it exits: retry the episode shortly."
            ) from e
        return sock

    def exchange(self, sock: socket.socket, request: dict[str, Any], timeout_s: float | None) -> dict[str, Any]:
        """Send ``request`` on ``sock`` and return the broker's answer.

        Raises:
            InfraError: (or the subclass the broker named) if the broker reported an error, closed the
                connection, or did not answer within ``timeout_s``.
        """
        sock.settimeout(timeout_s)
        try:
            send_frame(sock, request)
            answer = recv_frame(sock)
        except TimeoutError as e:
            raise InfraError(
                f"The sandbox broker at {self.path} did not answer {request['op']} within {timeout_s:g} s."
            ) from e
        except (OSError, ValueError) as e:
            answer = None
            detail = f" ({e})"
        else:
            detail = ""
        if answer is None:
            raise InfraError(
                f"The sandbox broker at {self.path} closed the connection during {request['op']}{detail}: it "
                "exited, and the sandboxes it leased are gone. The controller restarts it; start a new episode."
            )
        if "error" in answer:
            raise _ERRORS.get(answer.get("type", ""), InfraError)(answer["error"])
        return answer
