"""The ``docker`` backend: sandboxes as containers of a real Docker engine, through the ``docker`` SDK.

Containers run ``sleep infinity`` as their main process with ``--network none`` and memory (no swap), CPU
and process limits (upstream: 1 GB, 2 CPUs). The episode's shell is an interactive login bash started with
``docker exec`` on a terminal; independent processes are further ``docker exec`` s. Each ``open`` starts a
container and its shell, and ``close`` removes the container; warm sandboxes come from a
:class:`~agentrl_envs.sandboxes.pool.SandboxPool` in front of the backend, as for bwrap. Images come from
``env_images/`` (``env_images/os/build``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import select
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentrl_envs.core.errors import BackendUnavailableError, InfraError
from agentrl_envs.sandboxes.base import (
    KILLED_EXIT_CODES,
    WORKDIR,
    ExecResult,
    Limits,
    Sandbox,
    SandboxBackend,
    ShellResult,
)
from agentrl_envs.sandboxes.cgroup import Cgroup, CgroupCounters
from agentrl_envs.sandboxes.shell import ShellChannel, ShellDriver

__all__ = ["LABEL", "OWNER_LABEL", "DockerBackend", "DockerSandbox", "engine_client", "owner"]

logger = logging.getLogger(__name__)

LABEL = "agentrl.sandbox"
"""Label on every container this backend starts, valued with its image name (used to find leftovers)."""
OWNER_LABEL = "agentrl.owner"
"""Label naming the process that started the container: ``<hostname>:<pid>``."""
_SHELL_ENV = {"TERM": "dumb", "HOME": "/root", "USER": "root", "LANG": "C.UTF-8"}
# How long a post-mortem waits for the engine to record the exit of a shell that /proc already shows gone.
_ENGINE_CATCH_UP_S = 2.0


def owner() -> str:
    """The :data:`OWNER_LABEL` value of this process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def engine_client() -> Any:
    """A ``docker`` SDK client of the local engine, checked with a ping.

    Raises:
        BackendUnavailableError: If the SDK is missing or no engine answers.
    """
    try:
        import docker
    except ImportError as e:
        raise BackendUnavailableError(
            "The docker sandbox backend needs the docker SDK: pip install 'agentrl-envs[docker]'."
        ) from e
    try:
        client = docker.from_env()
        client.ping()
    except Exception as e:
        raise BackendUnavailableError(
            f"No Docker engine reachable ({e}). Start dockerd (see docs/sandboxes.md) or use backend='bwrap'."
        ) from e
    return client


class _SocketChannel(ShellChannel):
    """The raw stream of a ``docker exec`` with a terminal (no multiplexing headers when tty=True)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        with contextlib.suppress(OSError):  # a dead peer shows up as end of stream on the next recv
            self.sock.sendall(data)

    def recv(self, timeout: float) -> bytes | None:
        ready, _, _ = select.select([self.sock], [], [], max(0.0, timeout))
        if not ready:
            return None
        try:
            return self.sock.recv(65536)
        except (BlockingIOError, TimeoutError):
            return None
        except OSError:
            return b""

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class DockerSandbox(Sandbox):
    """One leased container and its shell."""

    def __init__(self, client: Any, container: Any, *, image: str, limits: Limits) -> None:
        """Start the shell in a running container (taken from the pool or just started).

        Raises:
            InfraError: If the shell does not come up (the container is removed).
        """
        self.client = client
        self.container = container
        self.image = image
        self.limits = limits
        self._driver: ShellDriver | None = None
        self._shell_pid = 0
        self._proc_shows_shell = False
        self._exec_id = ""
        try:
            self._start_shell()
        except BaseException:
            self.close()
            raise

    def _start_shell(self) -> None:
        api = self.client.api
        exec_id = api.exec_create(
            self.container.id, ["bash", "--login", "-i"], stdin=True, tty=True, environment=_SHELL_ENV, workdir=WORKDIR
        )["Id"]
        self._exec_id = exec_id
        sock = api.exec_start(exec_id, socket=True, tty=True)
        raw = getattr(sock, "_sock", sock)
        raw.setblocking(False)
        self._driver = ShellDriver(_SocketChannel(raw), what=f"docker sandbox {self.container.short_id} ({self.image})")
        self._driver.setup(timeout=30.0)
        self._shell_pid = int(api.exec_inspect(exec_id)["Pid"])
        # An engine on this host shows the shell in our /proc; one elsewhere (or in another pid namespace) not.
        self._proc_shows_shell = Path(f"/proc/{self._shell_pid}").exists()
        self.container.reload()
        self._cgroup = _container_cgroup(int(self.container.attrs["State"]["Pid"]))
        self._init_pid = int(self.container.attrs["State"]["Pid"])

    @property
    def shell_pid(self) -> int:
        """The host pid of the shell (the ``docker exec`` ed bash)."""
        return self._shell_pid

    @property
    def alive(self) -> bool:
        """Whether the shell process is still running."""
        return self._driver is not None and self._shell_pid > 0 and Path(f"/proc/{self._shell_pid}").exists()

    def _shell_running(self) -> bool:
        """Whether the shell runs, asking the engine only when ``/proc`` cannot show it (a remote engine).

        A shell already gone when a script is sent is the sandbox's fault, one that ends while it runs is the
        script's (a :class:`~agentrl_envs.sandboxes.shell.ShellLostError`), so this check must not miss a running shell.
        """
        if self.alive:
            return True
        if self._proc_shows_shell:
            return False  # gone from /proc that showed it: the engine may still say "running" for a moment
        try:
            return bool(self.client.api.exec_inspect(self._exec_id).get("Running"))
        except Exception:  # the engine cannot say: take the shell as gone
            return False

    def run_shell(self, script: str) -> ShellResult:
        """Run ``script`` in the shell; limits that were hit are reported in ``notes``."""
        if self._driver is None or not self._shell_running():
            raise InfraError(
                f"docker sandbox {self.container.short_id}: the shell exited or was killed before this command. "
                f"{self._post_mortem()}"
            )
        before = self._counters()
        try:
            output, timed_out = self._driver.run(
                script, timeout=self.limits.command_timeout_s, hard_stop=self._hard_stop
            )
        except InfraError as e:
            raise type(e)(f"{e} {self._post_mortem()}") from e  # the same kind of error, explained
        after = self._counters()
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
        return ShellResult(output, timed_out, notes)

    def _post_mortem(self) -> str:
        """What the engine says of the shell and the container, for an error that has to be explained later."""
        try:
            shell = self._shell_record()
            self.container.reload()
            state = self.container.attrs["State"]
        except Exception as e:  # the engine itself may be what failed
            return f"(no post-mortem: {type(e).__name__}: {e})"
        return (
            f"(shell pid {self._shell_pid}: running={shell.get('Running')}, exit code {shell.get('ExitCode')}; "
            f"container {state.get('Status')}, OOM-killed={state.get('OOMKilled')})"
        )

    def _shell_record(self) -> dict[str, Any]:
        """The engine's record of the shell, once it has caught up with a shell that ``/proc`` shows gone.

        The kernel reaps the shell before the engine hears of its exit, so for a moment the engine still says
        "running" with no exit code; a post-mortem taken then would hide how the shell ended.
        """
        deadline = time.monotonic() + _ENGINE_CATCH_UP_S
        record = self.client.api.exec_inspect(self._exec_id)
        while record.get("Running") and self._proc_shows_shell and not self.alive and time.monotonic() < deadline:
            time.sleep(0.05)
            record = self.client.api.exec_inspect(self._exec_id)
        return record

    def _counters(self) -> CgroupCounters:
        return self._cgroup.counters() if self._cgroup is not None else CgroupCounters(0, 0)

    def _hard_stop(self) -> int:
        if self._cgroup is None:
            return 0
        return self._cgroup.kill(spare=frozenset({self._init_pid, self._shell_pid}))

    def exec(self, argv: list[str], *, timeout: float | None = None) -> ExecResult:
        """Run ``argv`` as root in the container (``timeout`` enforced with coreutils' ``timeout``)."""
        limit = timeout if timeout is not None else self.limits.command_timeout_s
        command = ["timeout", "-s", "KILL", f"{limit:g}", *argv]
        started = time.monotonic()
        before = self._counters()
        try:
            code, (stdout, stderr) = self.container.exec_run(command, demux=True, workdir=WORKDIR, user="root")
        except Exception as e:
            raise InfraError(f"docker sandbox {self.container.short_id}: exec failed: {e}") from e
        # `timeout -s KILL` exits 137 both when it killed the command and when something else did (the OOM
        # killer, the script itself): only the first took the whole limit.
        timed_out = code in KILLED_EXIT_CODES and time.monotonic() - started >= limit
        oom_kills = self._counters().oom_kills - before.oom_kills
        return ExecResult(code, stdout or b"", stderr or b"", timed_out=timed_out, oom_kills=oom_kills)

    def settle(self) -> None:
        """Wait until the container's background processes stop changing (see :meth:`Cgroup.settle`)."""
        if self._cgroup is not None:
            self._cgroup.settle(ignore=frozenset({self._init_pid, self._shell_pid}))

    def close(self) -> None:
        """Close the shell and remove the container."""
        if self._driver is not None:
            self._driver.close()
            self._driver = None
        with contextlib.suppress(Exception):
            self.container.remove(force=True)


def _container_cgroup(pid: int) -> Cgroup | None:
    """The container's cgroup directories on the host (for limit counters and killing), if visible."""
    dirs: dict[str, Path] = {}
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in ("memory", "pids", "freezer"):
            if controller in controllers.split(","):
                dirs[controller] = Path("/sys/fs/cgroup") / controller / path.lstrip("/")
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").is_file():
            dirs["unified"] = Path("/sys/fs/cgroup") / path.lstrip("/")
    return Cgroup(dirs) if dirs else None


class DockerBackend(SandboxBackend):
    """Opens :class:`DockerSandbox` es, a container started for each (pool them with a ``SandboxPool``)."""

    name = "docker"

    def __init__(self, tag: Callable[[str], str], *, limits: Limits | None = None) -> None:
        """Connect to the engine.

        Args:
            tag: Maps an image name (``default``) to its Docker tag (``agentrl/os-default:latest``).
            limits: Per-container limits (upstream's by default).

        Raises:
            BackendUnavailableError: If the SDK is missing or no engine answers.
        """
        self.client = engine_client()
        self.tag = tag
        self.limits = limits or Limits()

    def open(self, image: str) -> DockerSandbox:
        """Start a container of ``image`` and its shell."""
        return DockerSandbox(self.client, self._start(image), image=image, limits=self.limits)

    def _start(self, image: str) -> Any:
        import docker.errors

        limits = self.limits
        tag = self.tag(image)
        try:
            return self.client.containers.run(
                tag,
                entrypoint=["/bin/sleep"],
                command=["infinity"],
                detach=True,
                network_mode="none",
                mem_limit=f"{limits.memory_mb}m",
                memswap_limit=f"{limits.memory_mb}m",
                nano_cpus=int(limits.cpus * 1e9),
                pids_limit=limits.pids,
                working_dir=WORKDIR,
                user="root",
                hostname=secrets.token_hex(6),
                labels={LABEL: image, OWNER_LABEL: owner()},
            )
        except docker.errors.ImageNotFound as e:
            raise BackendUnavailableError(f"Docker image {tag} is missing; build it with env_images/os/build.") from e
        except docker.errors.DockerException as e:
            raise InfraError(f"Could not start a container of {tag}: {e}") from e
