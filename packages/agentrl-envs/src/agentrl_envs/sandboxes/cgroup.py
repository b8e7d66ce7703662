"""A cgroup per sandbox: memory, process-count and CPU limits, plus a reliable way to kill everything in it.

Both cgroup layouts are handled. With v1 (separate hierarchies per controller) the sandbox gets a directory
in the ``memory``, ``pids``, ``cpu`` and ``freezer`` hierarchies; with v2 one directory in the unified tree.
Each directory is created under the cgroup this process already lives in, named ``agentrl-<id>``, and is
removed by :meth:`Cgroup.destroy` after everything in it has been killed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from agentrl_envs.core.errors import BackendUnavailableError, InfraError

__all__ = ["PREFIX", "Cgroup", "CgroupCounters", "cgroup_leftovers", "leftover_groups"]

_ROOT = Path("/sys/fs/cgroup")
_V1_CONTROLLERS = ("memory", "pids", "cpu", "freezer")
PREFIX = "agentrl-"


@dataclass(frozen=True)
class CgroupCounters:
    """Event counters that reveal a limit being hit."""

    pids_max_hits: int
    oom_kills: int


def _unified() -> bool:
    return (_ROOT / "cgroup.controllers").is_file()


def _own_path(controller: str) -> str:
    """This process's cgroup path in a v1 hierarchy (``controller``) or in v2 (``""``)."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") or (controller == "" and controllers == ""):
            return path.lstrip("/")
    return ""


class Cgroup:
    """The cgroup directories of one sandbox."""

    def __init__(self, dirs: dict[str, Path]) -> None:
        """Wrap existing directories; use :meth:`create`."""
        self.dirs = dirs

    @classmethod
    def create(cls, name: str, *, memory_mb: int, pids: int, cpus: float) -> Cgroup:
        """Create and configure the sandbox's cgroup.

        Raises:
            BackendUnavailableError: If cgroups cannot be created here (not root, or no writable cgroupfs).
        """
        try:
            return (
                cls._create_v2(name, memory_mb, pids, cpus)
                if _unified()
                else cls._create_v1(name, memory_mb, pids, cpus)
            )
        except OSError as e:
            raise BackendUnavailableError(
                f"Cannot create a cgroup for the sandbox ({e}); the bwrap backend needs root and a writable "
                "/sys/fs/cgroup to enforce memory and process limits."
            ) from e

    @classmethod
    def _create_v1(cls, name: str, memory_mb: int, pids: int, cpus: float) -> Cgroup:
        dirs: dict[str, Path] = {}
        group = cls(dirs)
        try:
            for controller in _V1_CONTROLLERS:
                path = _ROOT / controller / _own_path(controller) / f"{PREFIX}{name}"
                path.mkdir()
                dirs[controller] = path
            limit = str(memory_mb * 1024 * 1024)
            _write(dirs["memory"] / "memory.limit_in_bytes", limit)
            with contextlib.suppress(OSError):  # absent without swap accounting
                _write(dirs["memory"] / "memory.memsw.limit_in_bytes", limit)
            _write(dirs["pids"] / "pids.max", str(pids))
            period = 100_000
            _write(dirs["cpu"] / "cpu.cfs_period_us", str(period))
            _write(dirs["cpu"] / "cpu.cfs_quota_us", str(int(cpus * period)))
        except OSError:
            group.destroy()
            raise
        return group

    @classmethod
    def _create_v2(cls, name: str, memory_mb: int, pids: int, cpus: float) -> Cgroup:
        path = _ROOT / _own_path("") / f"{PREFIX}{name}"
        path.mkdir()
        group = cls({"unified": path})
        try:
            _write(path / "memory.max", str(memory_mb * 1024 * 1024))
            with contextlib.suppress(OSError):
                _write(path / "memory.swap.max", "0")
            _write(path / "pids.max", str(pids))
            _write(path / "cpu.max", f"{int(cpus * 100_000)} 100000")
        except OSError:
            group.destroy()
            raise
        return group

    @property
    def procs_files(self) -> list[Path]:
        """The ``cgroup.procs`` files a process writes its pid to in order to join."""
        return [d / "cgroup.procs" for d in self.dirs.values()]

    def pids(self) -> set[int]:
        """Processes currently in the cgroup."""
        path = self.dirs.get("unified") or self.dirs.get("pids")
        if path is None:
            return set()
        try:
            return {int(p) for p in (path / "cgroup.procs").read_text().split()}
        except OSError:
            return set()

    def settle(self, *, ignore: frozenset[int] = frozenset(), quiet_s: float = 0.2, limit_s: float = 2.0) -> None:
        """Wait until the cgroup's processes stop changing (which pids, their names and uids) for ``quiet_s``.

        Background work a setup script left behind (``sudo -u bob sleep 1000 &``) needs a moment to reach
        its final state; upstream's agent only acts seconds after setup, so the sandbox should look settled.
        Gives up after ``limit_s`` (a busy loop never settles; that is the task's business). Returns at once
        when nothing but the ``ignore`` d processes (the sandbox's own) is running.
        """
        deadline = time.monotonic() + limit_s
        last, since = self._snapshot(ignore), time.monotonic()
        while last and time.monotonic() < deadline and time.monotonic() - since < quiet_s:
            time.sleep(0.02)
            now = self._snapshot(ignore)
            if now != last:
                last, since = now, time.monotonic()

    def _snapshot(self, ignore: frozenset[int]) -> frozenset[tuple[int, str, str]]:
        """``(pid, name, real uid)`` of each process in the cgroup but ``ignore``."""
        entries = set()
        for pid in self.pids() - ignore:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            uid = (fields.get("Uid", "").split() or [""])[0]
            entries.add((pid, fields.get("Name", "").strip(), uid))
        return frozenset(entries)

    def counters(self) -> CgroupCounters:
        """How often the process limit was hit and how many processes the OOM killer took."""
        if "unified" in self.dirs:
            d = self.dirs["unified"]
            return CgroupCounters(_field(d / "pids.events", "max"), _field(d / "memory.events", "oom_kill"))
        return CgroupCounters(
            _field(self.dirs["pids"] / "pids.events", "max"),
            _field(self.dirs["memory"] / "memory.oom_control", "oom_kill"),
        )

    def kill(self, *, spare: frozenset[int] = frozenset()) -> int:
        """SIGKILL every process in the cgroup except ``spare``, freezing it first so none can fork meanwhile.

        Returns:
            How many processes were killed.
        """
        freezer = self.dirs.get("freezer")
        unified = self.dirs.get("unified")
        killed = 0
        for _ in range(50):  # a frozen cgroup cannot grow, so this converges at once; the bound is a guard
            self._freeze(freezer, unified, True)
            victims = self.pids() - spare
            for pid in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self._freeze(freezer, unified, False)
            killed += len(victims)
            if not victims:
                break
            time.sleep(0.01)
        return killed

    @staticmethod
    def _freeze(freezer: Path | None, unified: Path | None, frozen: bool) -> None:
        with contextlib.suppress(OSError):
            if freezer is not None:
                _write(freezer / "freezer.state", "FROZEN" if frozen else "THAWED")
            elif unified is not None:
                _write(unified / "cgroup.freeze", "1" if frozen else "0")

    def destroy(self, *, timeout: float = 5.0) -> None:
        """Kill everything left in the cgroup and remove its directories.

        Raises:
            InfraError: If a directory cannot be removed within ``timeout`` (a process refuses to die).
        """
        if self.pids():
            self.kill()
        deadline = time.monotonic() + timeout
        for path in list(self.dirs.values()):
            while True:
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as e:  # EBUSY while killed processes are still being reaped
                    if time.monotonic() > deadline:
                        raise InfraError(f"Could not remove cgroup {path}: {e}") from e
                    self.kill()
                    time.sleep(0.01)
        self.dirs = {}


def cgroup_leftovers() -> list[Path]:
    """Sandbox cgroups that still exist (for leak checks)."""
    if _unified():
        roots = [_ROOT / _own_path("")]
    else:
        roots = [_ROOT / c / _own_path(c) for c in _V1_CONTROLLERS]
    return sorted(p for root in roots if root.is_dir() for p in root.glob(f"{PREFIX}*"))


def leftover_groups() -> dict[str, Cgroup]:
    """Sandbox cgroups that still exist, by sandbox id (for sweeping)."""
    groups: dict[str, dict[str, Path]] = {}
    unified = _unified()
    for path in cgroup_leftovers():
        controller = "unified" if unified else path.relative_to(_ROOT).parts[0]
        groups.setdefault(path.name[len(PREFIX) :], {})[controller] = path
    return {sandbox_id: Cgroup(dirs) for sandbox_id, dirs in groups.items()}


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _field(path: Path, name: str) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    except (OSError, ValueError):
        pass
    return 0
