from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentrl_envs.core.processes import SharedServer, pid_alive, settable_signals, spawn, spawner_thread


class FakeServer:
    def __init__(self) -> None:
        self.running = True
        self.stops = 0

    def stop(self) -> None:
        self.running = False
        self.stops += 1


def test_one_server_is_shared_until_its_last_user_releases_it() -> None:
    started: list[FakeServer] = []
    shared = SharedServer(lambda: started.append(FakeServer()) or started[-1])
    first, second = shared.acquire(), shared.acquire()
    assert first is second and len(started) == 1
    shared.release()
    assert first.running
    shared.release()
    assert not first.running and first.stops == 1
    assert shared.acquire() is not first and len(started) == 2
    shared.stop()


def test_a_dead_server_is_replaced_on_acquire() -> None:
    shared = SharedServer(FakeServer)
    first = shared.acquire()
    first.running = False  # crashed
    assert shared.acquire() is not first
    shared.stop()


def test_pid_alive() -> None:
    assert pid_alive(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert not pid_alive(child.pid)


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    while Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
        time.sleep(0.01)  # exited, not yet reaped
    assert not pid_alive(child.pid)
    child.wait()


def test_a_live_child_is_alive_until_it_is_reaped() -> None:
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()
    assert not pid_alive(child.pid)


def test_a_command_name_with_a_parenthesis_is_read_right(tmp_path: Path) -> None:
    # The state follows the last ")" of /proc/PID/stat; a name holding ") Z" fooled a split at the first one.
    program = tmp_path / "w) Z x"
    program.symlink_to("/bin/sleep")
    child = subprocess.Popen([str(program), "30"])
    try:
        while Path(f"/proc/{child.pid}/stat").read_text().partition(" ")[2][:8] != "(w) Z x)":
            time.sleep(0.01)  # until it has exec'd
        assert pid_alive(child.pid)
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("pid", [0, -1, -os.getpid(), 2**62])
def test_numbers_that_name_no_process_are_not_alive(pid: int) -> None:
    assert not pid_alive(pid)  # 0 and -N are process groups to os.kill, which would say "alive"


def test_without_procfs_a_process_of_another_user_counts_as_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    # procfs mounted with hidepid (or no procfs at all): the signal check decides, and EPERM means it exists.
    def hidden(self: Path) -> bytes:
        raise PermissionError(13, "hidden", str(self))

    def not_ours(pid: int, sig: int) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(Path, "read_bytes", hidden)
    assert pid_alive(os.getpid())  # the signal check alone
    monkeypatch.setattr(os, "kill", not_ours)
    assert pid_alive(1)


def _on_exited_thread(work: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """``work()`` run on a thread that has exited (in the kernel, not only in Python) when this returns."""
    out: list[subprocess.Popen[bytes]] = []
    thread = threading.Thread(target=lambda: out.append(work()))
    thread.start()
    thread.join()
    while Path(f"/proc/self/task/{thread.native_id}").exists():
        time.sleep(0.01)
    return out[0]


@pytest.mark.parametrize("death_signal", [signal.SIGTERM, None])
def test_a_spawned_child_outlives_the_thread_that_asked_for_it(death_signal: signal.Signals | None) -> None:
    child = _on_exited_thread(lambda: spawn(["sleep", "30"], death_signal=death_signal))
    try:
        time.sleep(0.2)  # a parent-death signal would have arrived by now
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_a_plain_child_dies_with_the_thread_that_forked_it() -> None:
    # The kernel behaviour spawn() exists for: the parent-death signal bwrap sets (the sandboxes' flags) follows
    # the forking thread, not the process.
    flags = ["--die-with-parent", "--unshare-pid", "--unshare-net", "--bind", "/", "/", "--proc", "/proc"]

    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen(["bwrap", *flags, "--dev", "/dev", "sleep", "30"])
        while not _grandchildren(process.pid):  # bwrap is set up (and has set its signal) once the command runs
            time.sleep(0.01)
        return process

    child = _on_exited_thread(start)
    assert child.wait(timeout=10) == -signal.SIGKILL


def _grandchildren(pid: int) -> list[str]:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [g for c in children for g in Path(f"/proc/{c}/task/{c}/children").read_text().split()]
    except OSError:
        return []


KILLED_OWNER = """
import sys, threading
from agentrl_envs.core.processes import spawn
children = []
thread = threading.Thread(target=lambda: children.append(spawn(["sleep", "1000"])))
thread.start()
thread.join()
print(children[0].pid, flush=True)
threading.Event().wait()
"""


def test_a_spawned_child_dies_with_its_owner_process_killed_by_sigkill() -> None:
    owner = subprocess.Popen([sys.executable, "-c", KILLED_OWNER], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    child = int(owner.stdout.readline())
    assert pid_alive(child)
    owner.kill()
    owner.wait()
    deadline = time.monotonic() + 10
    while pid_alive(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pid_alive(child)


def test_spawn_forks_on_one_thread_and_reports_errors_to_the_caller() -> None:
    with pytest.raises(FileNotFoundError):
        spawn(["/nonexistent/agentrl-program"])
    with pytest.raises(TypeError, match=re.escape("pass no preexec_fn")):
        spawn(["true"], preexec_fn=lambda: None)
    thread = spawner_thread()
    assert thread.is_alive() and thread.daemon
    assert spawn(["true"]).wait(timeout=10) == 0  # the thread survived the errors
    assert spawner_thread() is thread


def test_a_forked_child_process_spawns_on_its_own_thread() -> None:
    spawner_thread()  # started in this process; a fork does not copy it
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            code = spawn(["true"]).wait(timeout=10)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


INHERITED_SIGNALS = """
import signal, subprocess
from agentrl_envs.core.processes import spawn
# As a job started with `&` by a script (SIGINT and SIGQUIT ignored), on a thread that blocks signals: the spawner
# thread started below inherits that mask.
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGQUIT, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGUSR1})
for fresh in (False, True):
    child = spawn(["grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"], fresh_signals=fresh, stdout=subprocess.PIPE)
    print(fresh, *child.communicate()[0].decode().split(), flush=True)
"""


def _signal_bits(*signals: signal.Signals) -> int:
    return sum(1 << (s - 1) for s in signals)


def test_fresh_signals_start_a_child_with_none_ignored_or_blocked() -> None:
    owner = subprocess.run([sys.executable, "-c", INHERITED_SIGNALS], capture_output=True, text=True, timeout=60)
    assert owner.returncode == 0, owner.stderr
    seen = {}
    for line in owner.stdout.splitlines():
        fresh, *fields = line.split()  # "True SigBlk: <hex> SigIgn: <hex>"
        masks = {name: int(value, 16) for name, value in zip(fields[::2], fields[1::2], strict=True)}
        seen[fresh == "True"] = (masks["SigIgn:"], masks["SigBlk:"])
    # What a plain child gets (the kernel keeps ignored signals and the mask across exec) ...
    ignored, blocked = seen[False]
    assert ignored & _signal_bits(signal.SIGINT, signal.SIGQUIT) == _signal_bits(signal.SIGINT, signal.SIGQUIT)
    assert blocked & _signal_bits(signal.SIGINT, signal.SIGUSR1) == _signal_bits(signal.SIGINT, signal.SIGUSR1)
    # ... and what a fresh one gets (of the signals a program can set at all).
    settable = _signal_bits(*settable_signals())
    assert (seen[True][0] & settable, seen[True][1] & settable) == (0, 0)
