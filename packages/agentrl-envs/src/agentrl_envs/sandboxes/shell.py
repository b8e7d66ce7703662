r"""Driving a persistent interactive bash over a terminal: send a script, read its output, enforce the limit.

The shell runs with its terminal's echo off and empty prompts, so what comes back is what the commands
wrote. The end of a command is found by a sentinel: after the script, the driver sends a ``printf`` that
writes a random nonce between two ``\\x1e`` bytes; the command's output is everything before it. (Upstream
instead waits for the next coloured prompt; a sentinel cannot be confused by output that looks like one.)
A command that starts a nested shell (``su - alice``, ``bash``) brings that shell's own prompt back. The
sentinel is therefore sent as two lines, each printing a nonce: what the shell prints between them is its
current prompt, which is cut from the end of the command's output, and the second line empties ``PS1`` and
``PS2`` so the nested shell is quiet from then on. Plain ``printf`` and assignments work in ``sh`` too.
A command that runs past the limit gets Ctrl-C through the terminal; if that does not bring the shell back,
the backend kills every process of the sandbox but the shell itself.
"""

from __future__ import annotations

import re
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from agentrl_envs.core.errors import InfraError

__all__ = ["ShellChannel", "ShellDriver", "ShellLostError"]

_OUTPUT_CAP = 1 << 20
"""Bytes of command output kept (the task shows 800 characters; the rest is read and dropped)."""
_SETUP = "stty -echo -onlcr 2>/dev/null; PS1=''; PS2=''; unset PROMPT_COMMAND; set +o history\n"
_GRACE_S = 3.0
_STALE_SENTINEL = re.compile(rb"\x1e[0-9a-f]{16}[ab]\x1e")


class ShellLostError(InfraError):
    """The shell exited, or stopped answering, while it ran a script.

    The script itself can do this (``exit``, ``exec``, Ctrl-D, ``kill -9 $$``, a builtin loop that ignores
    Ctrl-C), so a task that runs a model's scripts decides whose fault it is; to any other caller it is an
    :class:`InfraError`.
    """


class ShellChannel(ABC):
    """A byte stream to a shell's terminal."""

    @abstractmethod
    def send(self, data: bytes) -> None:
        """Write to the terminal (the shell's input)."""

    @abstractmethod
    def recv(self, timeout: float) -> bytes | None:
        """Read what is available within ``timeout`` seconds: ``None`` if nothing came, ``b""`` at end of stream."""

    @abstractmethod
    def close(self) -> None:
        """Close the stream."""


class ShellDriver:
    """Runs scripts one at a time in a shell reached through a :class:`ShellChannel`."""

    def __init__(self, channel: ShellChannel, *, what: str) -> None:
        """Wrap a freshly started shell's channel; call :meth:`setup` before the first :meth:`run`.

        Args:
            channel: The terminal stream of the shell.
            what: Names the sandbox in error messages.
        """
        self.channel = channel
        self.what = what
        self.closed = False

    def setup(self, timeout: float) -> None:
        """Silence echo and prompts, and wait until the shell answers.

        Raises:
            InfraError: If the shell does not answer within ``timeout`` seconds.
        """
        nonce = self._send_sentinel(_SETUP)
        if not self._read_until(nonce, time.monotonic() + timeout)[1]:
            raise InfraError(f"{self.what}: the shell did not start within {timeout:.0f} s.")

    def run(self, script: str, *, timeout: float, hard_stop: Callable[[], object]) -> tuple[bytes, bool]:
        """Run one script and return ``(output, timed_out)``.

        Args:
            script: Bash code, sent as typed input (multi-line scripts are fine).
            timeout: Seconds before the command is interrupted.
            hard_stop: A callable that kills every process of the sandbox but the shell, used when Ctrl-C
                is not enough.

        Raises:
            ShellLostError: If the shell ended or cannot be brought back.
        """
        nonce = self._send_sentinel(script if script.endswith("\n") else script + "\n")
        output, found = self._read_until(nonce, time.monotonic() + timeout)
        if found:
            return self._cut_prompt(output, nonce), False
        # Ctrl-C reaches the foreground job through the terminal and also drops unread input, sentinel included.
        self.channel.send(b"\x03")
        time.sleep(0.05)
        nonce = self._send_sentinel("\n")
        more, found = self._read_until(nonce, time.monotonic() + _GRACE_S)
        output += more
        if not found:
            hard_stop()
            nonce = self._send_sentinel("\n")
            more, found = self._read_until(nonce, time.monotonic() + _GRACE_S)
            output += more
            if not found:
                raise ShellLostError(f"{self.what}: the shell stopped answering after a command timed out.")
        # sentinels sent while the command still ran are printed once it is gone
        return _STALE_SENTINEL.sub(b"", output), True

    def close(self) -> None:
        """Close the channel (the backend stops the shell itself)."""
        if not self.closed:
            self.closed = True
            self.channel.close()

    def _send_sentinel(self, before: str) -> bytes:
        nonce = secrets.token_hex(8)
        # The escapes are written as text, so an echoed command line can never contain the sentinel bytes.
        sentinel = f"printf '\\036{nonce}a\\036'\nprintf '\\036{nonce}b\\036'; PS1=''; PS2=''\n"
        self.channel.send(before.encode("utf-8", "surrogateescape") + sentinel.encode())
        return b"\x1e" + nonce.encode() + b"b\x1e"

    @staticmethod
    def _cut_prompt(output: bytes, sentinel: bytes) -> bytes:
        """Drop the first sentinel, and the prompt printed between the two, from the end of ``output``."""
        first = sentinel[:-2] + b"a\x1e"
        head, found, prompt = output.rpartition(first)
        if not found:  # the command read the first sentinel line as its input
            return output
        return head[: -len(prompt)] if prompt and head.endswith(prompt) else head

    def _read_until(self, sentinel: bytes, deadline: float) -> tuple[bytes, bool]:
        """Read until ``sentinel``: the output before it (capped) and whether it came before ``deadline``."""
        head = bytearray()
        tail = b""
        keep = len(sentinel) - 1
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return bytes(head) + tail, False
            chunk = self.channel.recv(min(remaining, 1.0))
            if chunk == b"":
                raise ShellLostError(f"{self.what}: the shell exited or was killed.")
            if chunk is None:
                continue
            data = tail + chunk
            position = data.find(sentinel)
            if position >= 0:
                head += data[:position][: max(0, _OUTPUT_CAP - len(head))]
                return bytes(head), True
            cut = max(0, len(data) - keep)
            head += data[:cut][: max(0, _OUTPUT_CAP - len(head))]
            tail = data[cut:]
