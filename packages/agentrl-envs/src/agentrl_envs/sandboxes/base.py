"""What every sandbox offers: a persistent interactive shell and independent processes in one isolated root.

A :class:`Sandbox` is one isolated Linux system for one episode. It runs a long-lived interactive login
shell (state such as variables, ``cd``, ``su`` and background jobs survives between commands) and, next to
it, independent processes in the same root (a task's init and check scripts). A :class:`SandboxBackend`
opens sandboxes of named images. Backends: ``bwrap`` (bubblewrap, embedded default) and ``docker``.
"""

from __future__ import annotations

import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

__all__ = ["KILLED_EXIT_CODES", "WORKDIR", "ExecResult", "Limits", "Sandbox", "SandboxBackend", "ShellResult"]

WORKDIR = "/root"
"""Where the shell and independent processes start (upstream's containers are created with ``WorkingDir: /root``)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox (upstream's containers: 1 GB, 2 CPUs, 30 s per command)."""

    memory_mb: int = 1024
    """Memory for all processes of the sandbox together (no swap)."""
    pids: int = 512
    """Most processes alive at once; stops fork bombs."""
    cpus: float = 2.0
    """CPU time share, in CPUs."""
    command_timeout_s: float = 30.0
    """Wall-clock limit of one shell command or independent process."""
    disk_mb: int = 512
    """Size of the writable layer (``bwrap``: a tmpfs; ``docker``: not enforced by the default storage driver)."""

    def __post_init__(self) -> None:
        """Reject limits that cannot work."""
        if self.memory_mb < 32 or self.pids < 8 or self.cpus <= 0 or self.command_timeout_s <= 0 or self.disk_mb < 1:
            raise ValueError(f"Sandbox limits out of range: {self}")


KILLED_EXIT_CODES = (-signal.SIGKILL, 128 + signal.SIGKILL)
"""How a process that SIGKILL ended exits: seen by its parent, or as a shell, ``bwrap`` or ``timeout`` reports it."""


@dataclass(frozen=True)
class ExecResult:
    """The outcome of an independent process."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    oom_kills: int = 0
    """Processes the OOM killer took in the sandbox while this one ran (its memory limit was reached)."""

    @property
    def killed(self) -> bool:
        """Whether SIGKILL ended the process (by the time limit when ``timed_out``, else by something else)."""
        return self.exit_code in KILLED_EXIT_CODES


@dataclass(frozen=True)
class ShellResult:
    """The outcome of one command in the interactive shell."""

    output: bytes
    """What the command wrote to the terminal (stdout and stderr interleaved), without prompts."""
    timed_out: bool = False
    """The command ran past the limit and was interrupted."""
    notes: list[str] = field(default_factory=list)
    """What the sandbox did about limits being hit (e.g. a fork bomb killed), for the tool output."""


class Sandbox(ABC):
    """One isolated system for one episode. Use as a context manager or call :meth:`close`."""

    image: str
    limits: Limits

    @abstractmethod
    def run_shell(self, script: str) -> ShellResult:
        """Run ``script`` in the persistent interactive shell and return its output.

        Raises:
            InfraError: If the shell is gone or stopped answering (the episode cannot go on).
        """

    @abstractmethod
    def exec(self, argv: list[str], *, timeout: float | None = None) -> ExecResult:
        """Run an independent process as root in the sandbox's root (separate from the shell).

        Raises:
            InfraError: If the sandbox is gone.
        """

    @abstractmethod
    def settle(self) -> None:
        """Wait (briefly, bounded) until processes left running in the background stop changing."""

    @abstractmethod
    def close(self) -> None:
        """Stop every process of the sandbox and remove everything it created (idempotent)."""

    @property
    @abstractmethod
    def shell_pid(self) -> int:
        """The host pid of the interactive shell (for health checks and fault-injection tests)."""

    @property
    @abstractmethod
    def alive(self) -> bool:
        """Whether the sandbox's shell is still running."""

    def __enter__(self) -> Sandbox:
        """Return the sandbox."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the sandbox."""
        self.close()


class SandboxBackend(ABC):
    """Opens sandboxes of named images."""

    name: str

    @abstractmethod
    def open(self, image: str) -> Sandbox:
        """Start a sandbox of ``image`` with its shell ready.

        Raises:
            BackendUnavailableError: If the backend's system component is missing.
            InfraError: If the sandbox could not be started.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the backend's shared resources (pools, clients)."""
