"""A :class:`ShellChannel` over the master side of a pseudo-terminal."""

from __future__ import annotations

import contextlib
import os
import select
import termios

from agentrl_envs.sandboxes.shell import ShellChannel

__all__ = ["PtyChannel", "open_pty"]


def open_pty() -> tuple[int, int]:
    """A new pseudo-terminal ``(master, slave)`` with echo and CR/LF translation off from the start."""
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # oflag: keep "\n" as is
    attrs[3] &= ~(termios.ECHO | termios.ECHONL)  # lflag: the shell's input is not echoed back
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    os.set_blocking(master, False)
    return master, slave


class PtyChannel(ShellChannel):
    """Reads and writes the master side of a pty; end of stream once every slave holder is gone."""

    def __init__(self, master: int) -> None:
        """Take ownership of ``master``."""
        self.master = master

    def send(self, data: bytes) -> None:
        """Write all of ``data``, waiting while the terminal's input buffer is full."""
        view = memoryview(data)
        while view:
            try:
                written = os.write(self.master, view)
            except BlockingIOError:
                select.select([], [self.master], [], 1.0)
                continue
            except OSError as e:  # EIO: the shell side is gone; the next recv reports it
                if e.errno == 5:
                    return
                raise
            view = view[written:]

    def recv(self, timeout: float) -> bytes | None:
        """What the shell wrote within ``timeout``; ``None`` if nothing, ``b""`` once the shell side is gone."""
        ready, _, _ = select.select([self.master], [], [], max(0.0, timeout))
        if not ready:
            return None
        try:
            return os.read(self.master, 65536)
        except BlockingIOError:
            return None
        except OSError as e:
            if e.errno == 5:  # EIO: no process holds the slave side any more
                return b""
            raise

    def close(self) -> None:
        """Close the master side."""
        with contextlib.suppress(OSError):
            os.close(self.master)
