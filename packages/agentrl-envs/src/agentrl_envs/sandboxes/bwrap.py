"""The ``bwrap`` backend: bubblewrap sandboxes over a read-only Debian rootfs (the embedded default).

Each sandbox is built like this (all as root, nothing left on the host afterwards):

1. a cgroup (memory, process count, CPU) that every process of the sandbox joins;
2. a private mount namespace (``unshare --mount``) in which a size-capped tmpfs holds the episode's writable
   layer and an overlay mount puts it over the cached rootfs; the namespace, and with it both mounts,
   disappears with its last process, so no mount can leak even if this process is killed;
3. ``bwrap`` over that overlay with new pid, network (loopback only, down), ipc, uts and cgroup
   namespaces, a fresh ``/proc`` whose ``sys`` tree is read-only, a minimal ``/dev``, no ``/sys``, only
   Docker's default capabilities (no ``CAP_SYS_ADMIN``, ``CAP_NET_ADMIN``, ``CAP_SYS_MODULE`` ...) and
   ``--die-with-parent``;
4. an interactive login shell on a pseudo-terminal as the sandbox's main process.

Every process of a sandbox is forked by :func:`~agentrl_envs.core.processes.spawn`, so it dies with this
process (SIGKILL included) and not with the thread that opened the sandbox: an episode may be reset on one
thread and stepped on others. It starts with fresh signal state (default dispositions, none blocked), as on a
machine of its own, whatever this process was started with.

Independent processes (a task's init and check scripts) enter the same mount and network namespaces and
join the shell's pid namespace through a second ``bwrap`` with the same restrictions.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentrl_envs.core.errors import BackendUnavailableError, InfraError
from agentrl_envs.core.processes import spawn
from agentrl_envs.sandboxes.base import WORKDIR, ExecResult, Limits, Sandbox, SandboxBackend, ShellResult
from agentrl_envs.sandboxes.cgroup import Cgroup, CgroupCounters
from agentrl_envs.sandboxes.pty import PtyChannel, open_pty
from agentrl_envs.sandboxes.shell import ShellDriver

__all__ = ["OWNER_FILE", "TEMP_PREFIX", "BwrapBackend", "BwrapSandbox"]

logger = logging.getLogger(__name__)

TEMP_PREFIX = "agentrl-bwrap-"
"""Prefix of each sandbox's temporary directory (the mount point of its writable layer): ``<prefix><id>-*``."""
OWNER_FILE = "owner.pid"
"""File in the temporary directory holding the pid of the process that owns the sandbox."""

# Docker's default capability set, minus the network ones a sandbox without network has no use for.
_CAPS = (
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID",
    "CAP_SETPCAP", "CAP_SETFCAP", "CAP_SYS_CHROOT", "CAP_AUDIT_WRITE",
)  # fmt: skip
_PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/root",
    "USER": "root",
    "LOGNAME": "root",
    "SHELL": "/bin/bash",
    "TERM": "dumb",
    "LANG": "C.UTF-8",
}
_TOOLS = ("bwrap", "unshare", "nsenter", "setsid")
_EXEC_OUTPUT_CAP = 16 << 20
"""Bytes of an independent process's stdout or stderr kept."""
# Joins the cgroup, mounts the writable layer and the overlay in the private mount namespace, then runs bwrap.
_WRAPPER = r"""
set -eu
layer=$1 lower=$2 size=$3 procs=$4; shift 4
for f in $procs; do echo $$ > "$f"; done
mount -t tmpfs -o "size=${size}m,mode=0755" agentrl-layer "$layer"
mkdir "$layer/upper" "$layer/work" "$layer/root"
mount -t overlay agentrl-root -o "lowerdir=$lower,upperdir=$layer/upper,workdir=$layer/work" "$layer/root"
exec "$@"
"""
_JOIN = 'for f in $1; do echo $$ > "$f"; done; shift; exec "$@"'


def _check_tools() -> None:
    missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
    if missing:
        raise BackendUnavailableError(
            f"The bwrap sandbox backend needs {', '.join(missing)}; install bubblewrap and util-linux "
            "(apt-get install bubblewrap util-linux)."
        )
    if os.geteuid() != 0:
        raise BackendUnavailableError(
            "The bwrap sandbox backend runs as root (it mounts an overlay and creates cgroups); "
            "run as root or use backend='docker'."
        )


def _bwrap_restrictions(root: str) -> list[str]:
    args = ["bwrap", "--bind", root, "/", "--dev", "/dev", "--proc", "/proc"]
    # uid 0 needs no capability to write most sysctls or /proc/sysrq-trigger: those must be read-only mounts.
    for path in _PROC_READ_ONLY:
        args += ["--ro-bind-try", path, path]
    args += ["--die-with-parent", "--cap-drop", "ALL"]
    for cap in _CAPS:
        args += ["--cap-add", cap]
    return args


class BwrapSandbox(Sandbox):
    """One bubblewrap sandbox with its shell; see the module docstring for how it is put together."""

    def __init__(self, rootfs: Path, *, image: str, limits: Limits) -> None:
        """Start the sandbox and its shell.

        Raises:
            BackendUnavailableError: If bubblewrap or util-linux is missing, or not running as root.
            InfraError: If the sandbox did not come up (everything created so far is removed).
        """
        _check_tools()
        self.image = image
        self.limits = limits
        self.id = secrets.token_hex(6)
        self._cgroup: Cgroup | None = None
        self._layer: Path | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._driver: ShellDriver | None = None
        self._chain: tuple[int, ...] = ()
        try:
            self._start(rootfs)
        except BaseException:
            self.close()
            raise

    def _start(self, rootfs: Path) -> None:
        limits = self.limits
        self._cgroup = Cgroup.create(self.id, memory_mb=limits.memory_mb, pids=limits.pids, cpus=limits.cpus)
        self._layer = Path(tempfile.mkdtemp(prefix=f"{TEMP_PREFIX}{self.id}-"))
        # Seen from the host only (the layer is mounted over it in the sandbox's private namespace): lets
        # sweep_leftovers() tell a crashed owner's directory from a live one.
        (self._layer / OWNER_FILE).write_text(str(os.getpid()))
        root = str(self._layer / "root")
        shell = [
            *_bwrap_restrictions(root),
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup",
            "--hostname", self.id,
            "--chdir", WORKDIR,
            "bash", "--login", "-i",
        ]  # fmt: skip
        procs = " ".join(str(p) for p in self._cgroup.procs_files)
        command = [
            "setsid", "--ctty",  # the pty becomes the controlling terminal: job control and Ctrl-C work
            "unshare", "--mount", "--propagation", "private",
            "sh", "-c", _WRAPPER, "sh", str(self._layer), str(rootfs), str(limits.disk_mb), procs, *shell,
        ]  # fmt: skip
        master, slave = open_pty()
        try:
            # SIGKILL on the owner's death already while the wrapper mounts, before bwrap sets its own. Fresh
            # signals: a shell started with SIGINT ignored (this process run by `cmd &`) cannot `trap '' INT`.
            self._process = spawn(
                command,
                death_signal=signal.SIGKILL,
                fresh_signals=True,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=_ENV,
                cwd="/",
            )
        finally:
            os.close(slave)
        self._driver = ShellDriver(PtyChannel(master), what=f"bwrap sandbox {self.id} ({self.image})")
        self._driver.setup(timeout=30.0)
        self._chain = tuple(self._shell_chain())
        if len(self._chain) != 3:
            raise InfraError(f"bwrap sandbox {self.id}: unexpected process tree {self._chain}.")

    def _shell_chain(self) -> list[int]:
        """Host pids of the bwrap monitor, the sandbox's pid 1 and the shell (spared by :meth:`_hard_stop`)."""
        assert self._process is not None
        chain = [self._process.pid]
        for _ in range(2):
            children = _children(chain[-1])
            if not children:
                break
            chain.append(min(children))
        return chain

    # ----------------------------------------------------------------- Sandbox API

    @property
    def shell_pid(self) -> int:
        """The host pid of the shell."""
        return self._chain[-1] if self._chain else 0

    @property
    def alive(self) -> bool:
        """Whether the shell's process tree is still running."""
        return self._process is not None and self._process.poll() is None

    def run_shell(self, script: str) -> ShellResult:
        """Run ``script`` in the shell; limits that were hit are reported in ``notes``."""
        if self._driver is None or not self.alive:
            raise InfraError(f"bwrap sandbox {self.id}: the shell exited or was killed before this command.")
        assert self._cgroup is not None
        before = self._cgroup.counters()
        output, timed_out = self._driver.run(script, timeout=self.limits.command_timeout_s, hard_stop=self._hard_stop)
        return ShellResult(output, timed_out, self._limit_notes(before))

    def _limit_notes(self, before: CgroupCounters) -> list[str]:
        assert self._cgroup is not None
        after = self._cgroup.counters()
        notes = []
        if after.pids_max_hits > before.pids_max_hits:
            killed = self._hard_stop()
            notes.append(
                f"[the process limit of {self.limits.pids} was reached; {killed} process(es) other than the "
                "shell were killed]"
            )
        if after.oom_kills > before.oom_kills:
            count = after.oom_kills - before.oom_kills
            notes.append(f"[the memory limit of {self.limits.memory_mb} MiB was reached; {count} process(es) killed]")
        return notes

    def _hard_stop(self) -> int:
        assert self._cgroup is not None
        return self._cgroup.kill(spare=frozenset(self._chain))

    def exec(self, argv: list[str], *, timeout: float | None = None) -> ExecResult:
        """Run ``argv`` as root in the sandbox's filesystem, network, ipc, uts and pid namespaces.

        Returns when ``argv``'s process exits, as ``docker exec`` does: processes it started in the background
        keep running in the sandbox (an init script's ``sleep 1000 &`` is part of the task's setup), so the
        output goes to files rather than pipes those processes would hold open.
        """
        if not self.alive or self._layer is None or self._cgroup is None:
            raise InfraError(f"bwrap sandbox {self.id}: the sandbox is not running.")
        monitor, _, shell = self._chain
        limit = timeout if timeout is not None else self.limits.command_timeout_s
        try:
            pidns = os.open(f"/proc/{shell}/ns/pid", os.O_RDONLY)
        except OSError as e:
            raise InfraError(f"bwrap sandbox {self.id}: the shell is gone ({e}).") from e
        namespaces = [f"--{kind}=/proc/{shell}/ns/{kind}" for kind in ("net", "ipc", "uts")]
        command = [
            "sh", "-c", _JOIN, "sh", " ".join(str(p) for p in self._cgroup.procs_files),
            "nsenter", f"--mount=/proc/{monitor}/ns/mnt", *namespaces, "--",
            *_bwrap_restrictions(str(self._layer / "root")),
            "--pidns", str(pidns), "--chdir", WORKDIR, *argv,
        ]  # fmt: skip
        before = self._cgroup.counters()
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                process = spawn(
                    command,
                    death_signal=signal.SIGKILL,
                    fresh_signals=True,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    env=_ENV,
                    pass_fds=(pidns,),
                    start_new_session=True,
                )
            finally:
                os.close(pidns)
            try:
                code, timed_out = process.wait(timeout=limit), False
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                code, timed_out = -signal.SIGKILL, True
            out.seek(0)
            err.seek(0)
            oom_kills = self._cgroup.counters().oom_kills - before.oom_kills
            return ExecResult(
                code, out.read(_EXEC_OUTPUT_CAP), err.read(_EXEC_OUTPUT_CAP), timed_out=timed_out, oom_kills=oom_kills
            )

    def settle(self) -> None:
        """Wait until the sandbox's background processes stop changing (see :meth:`Cgroup.settle`)."""
        if self._cgroup is not None:
            self._cgroup.settle(ignore=frozenset(self._chain))

    def close(self) -> None:
        """Kill the sandbox's processes and remove its cgroup and temporary directory."""
        if self._driver is not None:
            self._driver.close()
            self._driver = None
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                self._process.kill()  # --die-with-parent takes the sandbox's pid 1, and so its pid namespace
            self._process.wait()
            self._process = None
        if self._cgroup is not None:
            self._cgroup.destroy()
            self._cgroup = None
        if self._layer is not None:
            shutil.rmtree(self._layer, ignore_errors=True)
            self._layer = None


class BwrapBackend(SandboxBackend):
    """Opens :class:`BwrapSandbox` es; ``rootfs`` maps an image name to its unpacked root filesystem."""

    name = "bwrap"

    def __init__(self, rootfs: Callable[[str], Path], *, limits: Limits | None = None) -> None:
        """Configure the backend.

        Args:
            rootfs: Returns the unpacked rootfs of an image name (building it on first use).
            limits: Per-sandbox limits; upstream's by default.
        """
        self.rootfs = rootfs
        self.limits = limits or Limits()

    def open(self, image: str) -> BwrapSandbox:
        """Start a sandbox of ``image``."""
        started = time.monotonic()
        sandbox = BwrapSandbox(self.rootfs(image), image=image, limits=self.limits)
        logger.debug("bwrap sandbox %s (%s) up in %.0f ms", sandbox.id, image, 1000 * (time.monotonic() - started))
        return sandbox


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
