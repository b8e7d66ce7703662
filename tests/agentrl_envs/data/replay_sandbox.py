"""A deterministic stand-in for the OS task's sandbox, for comparing the texts two data roots make the env show.

A real shell's output varies from run to run (the init scripts draw random files and numbers), so two runs of the
same sample differ whatever the data root. This backend answers each command with output that depends on the
command only, and goes through every path of the env's rendering: plain output, no output, ANSI escapes and a
prompt echo (removed by the cleanup regexes), output over the truncation limit, and bytes that are not UTF-8.
"""

from __future__ import annotations

import hashlib

from agentrl_envs.sandboxes.base import ExecResult, Limits, Sandbox, SandboxBackend, ShellResult

__all__ = ["ReplayBackend"]


def _output(script: str) -> bytes:
    digest = hashlib.sha1(script.encode("utf-8")).hexdigest()
    kind = int(digest[0], 16) % 5
    if kind == 0:
        return b""
    if kind == 1:
        return f"\x1b[01;32m{digest}\x1b[0m\r\nroot@sandbox:/# ".encode()
    if kind == 2:
        return (digest * 30).encode()  # 1200 characters: truncated
    if kind == 3:
        return b"\xff\xfe" + digest.encode()  # not UTF-8
    return f"{digest}\n".encode()


class _ReplaySandbox(Sandbox):
    def __init__(self, image: str) -> None:
        self.image, self.limits, self._open = image, Limits(), True

    def run_shell(self, script: str) -> ShellResult:
        return ShellResult(_output(script))

    def exec(self, argv: list[str], *, timeout: float | None = None) -> ExecResult:
        digest = hashlib.sha1("\0".join(argv).encode("utf-8")).hexdigest()
        return ExecResult(int(digest[0], 16) % 2, digest.encode(), b"")

    def settle(self) -> None:
        pass

    def close(self) -> None:
        self._open = False

    @property
    def shell_pid(self) -> int:
        return 0

    @property
    def alive(self) -> bool:
        return self._open


class ReplayBackend(SandboxBackend):
    """Opens :class:`_ReplaySandbox` es."""

    name = "replay"

    def open(self, image: str) -> Sandbox:
        """A sandbox whose commands answer with output derived from the command."""
        return _ReplaySandbox(image)
