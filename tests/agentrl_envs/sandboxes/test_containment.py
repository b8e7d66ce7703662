"""Containment, on every backend, cold and pooled: no network, no host files, no host kernel settings or
processes, limits."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrl_envs.core.errors import InfraError
from agentrl_envs.core.processes import settable_signals
from agentrl_envs.sandboxes.base import SandboxBackend
from agentrl_envs.sandboxes.bwrap import BwrapSandbox


def test_no_network(backend: SandboxBackend) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        with backend.open("default") as box:
            tcp = box.run_shell(f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED || echo REFUSED")
            dns = box.run_shell("getent hosts deb.debian.org >/dev/null && echo RESOLVED || echo UNRESOLVED")
            curl = box.exec(["curl", "-sS", "--max-time", "2", "http://deb.debian.org/"])
    finally:
        server.close()
    assert b"REFUSED" in tcp.output and b"CONNECTED" not in tcp.output
    assert b"UNRESOLVED" in dns.output
    assert curl.exit_code != 0


def test_host_files_are_out_of_reach(backend: SandboxBackend, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    with backend.open("default") as box:
        read = box.run_shell(f"cat {secret} /etc/shadow-host 2>&1; ls /work /proc/1/root/work 2>&1")
        box.run_shell(f"mkdir -p {tmp_path} && echo overwritten > {secret} && touch {tmp_path}/planted")
        planted = box.exec(["cat", str(secret)])
    assert b"host secret" not in read.output
    assert planted.stdout == b"overwritten\n"  # the sandbox wrote its own copy of the path...
    assert secret.read_text() == "host secret"  # ...and the host's file is untouched
    assert not (tmp_path / "planted").exists()


def test_host_kernel_settings_and_processes_are_out_of_reach(backend: SandboxBackend) -> None:
    panic = Path("/proc/sys/kernel/panic").read_text()
    host = subprocess.Popen(["sleep", "987654"])
    try:
        with backend.open("default") as box:
            sysctl = box.run_shell("echo 42 > /proc/sys/kernel/panic; echo 1 > /proc/sys/vm/drop_caches; echo done")
            sysfs = box.run_shell("echo 1 > /sys/kernel/mm/ksm/run 2>&1; ls /sys/fs/cgroup 2>/dev/null | wc -l")
            procs = box.run_shell(f"cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '; kill -9 {host.pid}")
        assert Path("/proc/sys/kernel/panic").read_text() == panic
        assert b"done" in sysctl.output
        assert b"987654" not in procs.output
        assert host.poll() is None  # the host process survived the kill attempt
        assert sysfs.output.strip().endswith(b"0") or b"Read-only" in sysfs.output
    finally:
        host.kill()
        host.wait()


def test_fork_bomb_is_stopped_and_reported(backend: SandboxBackend) -> None:
    with backend.open("default") as box:
        bomb = box.run_shell("bomb() { bomb | bomb & }; bomb; sleep 2")
        after = box.run_shell("echo alive")
    assert any("process limit" in note for note in bomb.notes)
    # the shell works; dying bomb processes may still print "bash: fork: retry: ..." into the terminal, and bash
    # its job-control notice about the killed background job ("[1]+ Killed ..."), before the answer
    assert b"alive\n" in after.output
    assert subprocess.run(["true"], check=False).returncode == 0  # the host can still fork


def test_memory_hog_is_stopped_and_reported(backend: SandboxBackend) -> None:
    with backend.open("default") as box:
        hog = box.run_shell("head -c 600M /dev/zero | tail | wc -c")
        after = box.run_shell("echo alive")
    assert any("memory limit" in note for note in hog.notes)
    assert after.output == b"alive\n"


def test_sleep_is_cut_at_the_limit(backend: SandboxBackend) -> None:
    with backend.open("default") as box:
        slow = box.run_shell("sleep 1000")
        stubborn = box.run_shell("trap '' INT; sleep 1000")
        after = box.run_shell("echo alive")
        slow_exec = box.exec(["sleep", "1000"])
    assert slow.timed_out and stubborn.timed_out and slow_exec.timed_out
    assert after.output == b"alive\n"


@pytest.fixture
def started_with_ctrl_c_ignored() -> Iterator[None]:
    """This process ignoring SIGINT and SIGQUIT, as a job started with ``&`` by a script does (``make test &``)."""
    saved = {number: signal.signal(number, signal.SIG_IGN) for number in (signal.SIGINT, signal.SIGQUIT)}
    try:
        yield
    finally:
        for number, handler in saved.items():
            signal.signal(number, handler)


def _ignored_and_blocked(status: bytes) -> tuple[int, int]:
    """The ignored and blocked masks, of the signals a program can set (the C library's own two may be ignored
    by whoever started the test run, and nothing can change that)."""
    fields = dict(line.split(b":\t") for line in status.splitlines())
    settable = sum(1 << (number - 1) for number in settable_signals())
    return int(fields[b"SigIgn"], 16) & settable, int(fields[b"SigBlk"], 16) & settable


def test_this_process_signal_state_does_not_reach_the_sandbox(
    bwrap_backend: SandboxBackend, started_with_ctrl_c_ignored: None
) -> None:
    # (Docker's processes are started by its daemon, never by this process.) A shell that starts with SIGINT
    # ignored takes `trap '' INT` without a word and still breaks its loops on Ctrl-C: the OS task's wedge case.
    probe = ["grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"]
    with bwrap_backend.open("default") as box:
        independent = box.exec(probe)
        in_shell = box.run_shell(shlex.join(probe))
        trapped = box.run_shell("trap '' INT; kill -INT $$; echo survived")
    seen = (_ignored_and_blocked(independent.stdout), _ignored_and_blocked(in_shell.output), trapped.output)
    assert seen == ((0, 0), (0, 0), b"survived\n")


def test_shell_state_persists(backend: SandboxBackend) -> None:
    with backend.open("default") as box:
        box.run_shell("export GREETING=hello; cd /tmp; sleep 30 &")
        state = box.run_shell("echo $GREETING; pwd; jobs | wc -l")
        box.run_shell("useradd -m alice")
        su = box.run_shell("su - alice")
        whoami = box.run_shell("whoami; pwd")
        independent = box.exec(["bash", "-c", "whoami; ls /home"])
    assert state.output == b"hello\n/tmp\n1\n"
    assert su.output == b""
    assert whoami.output == b"alice\n/home/alice\n"
    assert independent.stdout == b"root\nalice\n"


def test_close_is_idempotent_and_leaves_no_temp_dirs(bwrap_backend: SandboxBackend) -> None:
    box = bwrap_backend.open("default")
    assert isinstance(box, BwrapSandbox)
    box.close()
    box.close()
    # this sandbox's own dirs only: a session-scoped broker's warm sandboxes may hold theirs meanwhile
    assert not [p for p in Path("/tmp").glob(f"agentrl-bwrap-{box.id}-*") if os.path.isdir(p)]


def test_exec_returns_while_its_background_children_run(backend: SandboxBackend) -> None:
    with backend.open("default") as box:
        started = box.exec(["bash", "-c", "sleep 1000 & echo started"])
        seen = box.run_shell("pgrep -fx 'sleep 1000' | wc -l")
    assert started.exit_code == 0 and started.stdout == b"started\n" and not started.timed_out
    assert seen.output == b"1\n"


def test_a_shell_killed_from_outside_is_an_infra_error_that_says_what_happened(backend: SandboxBackend) -> None:
    with backend.open("default") as box:
        os.kill(box.shell_pid, signal.SIGKILL)
        with pytest.raises(InfraError, match="the shell exited or was killed") as caught:
            box.run_shell("echo hello")
    if backend.name == "docker":
        assert "exit code 137" in str(caught.value) and "container running" in str(caught.value)
