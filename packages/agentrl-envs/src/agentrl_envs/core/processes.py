"""Helpers for the local processes backends start: children that die with this process, liveness, sharing.

Nothing a backend starts may outlive its owner, even one killed with SIGKILL. Linux's parent-death signal
(``PR_SET_PDEATHSIG``, which bwrap's ``--die-with-parent`` also sets) gives that guarantee, but its "parent" is
the *thread* that forked the child, not the process: a sandbox or server started by a short-lived thread (a
``threading.Thread`` per call, an idle worker retired by a thread pool, Starlette's anyio workers) is killed
as soon as that thread exits, in the middle of an episode another thread goes on stepping. So every such child
is forked by :func:`spawn`, on one thread that lives exactly as long as the process: the signal then fires when
the process dies (all of its threads), and never before, whichever thread asked for the child.

A child that stands for a machine of its own (a sandbox's shell and its processes) can also be started with the
signal state of a fresh process rather than this one's (``spawn(..., fresh_signals=True)``): signals ignored here
stay ignored across ``exec``, and so does a thread's blocked-signal mask. A job started with ``&`` by a script
(``make test > log &``) ignores SIGINT and SIGQUIT, and a shell that starts with SIGINT ignored cannot be made to
ignore it again: bash's ``trap '' INT`` does nothing while the interactive shell still breaks its loops on Ctrl-C.
"""

from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["SharedServer", "pid_alive", "settable_signals", "spawn", "spawner_thread", "stop_process"]

_PR_SET_PDEATHSIG = 1


def _load_prctl() -> Callable[[int, int], int] | None:
    """The C library's ``prctl``, loaded here because a forked child must not load libraries before it execs."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_prctl = _load_prctl()


class _Spawner:
    """The thread that forks every child of this process that must die with it (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    @property
    def thread(self) -> threading.Thread:
        """The spawning thread, started on first use; a daemon, so it ends only with the process."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, args=(self._jobs,), name="agentrl-spawner", daemon=True
                )
                self._thread.start()
            return self._thread

    def call(self, job: Callable[[], Any]) -> Any:
        """Run ``job`` on the spawning thread and return its result (or raise its exception)."""
        if threading.current_thread() is self.thread:
            return job()
        done: Future[Any] = Future()
        self._jobs.put((job, done))
        return done.result()

    @staticmethod
    def _serve(jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]]) -> None:
        while True:
            job, done = jobs.get()
            try:
                done.set_result(job())
            except BaseException as e:  # the caller's error: hand it over, keep the thread alive
                done.set_exception(e)


_spawners: dict[int, _Spawner] = {}


def _spawner() -> _Spawner:
    """This process's spawner (keyed by pid: threads do not survive a fork, so a forked child starts its own)."""
    pid = os.getpid()
    return _spawners.get(pid) or _spawners.setdefault(pid, _Spawner())


def spawner_thread() -> threading.Thread:
    """The thread :func:`spawn` forks children on (the parent whose death their parent-death signal follows)."""
    return _spawner().thread


def _die_with(owner: int, death_signal: int) -> None:
    """In a forked child: get ``death_signal`` when ``owner`` dies."""
    assert _prctl is not None
    _prctl(_PR_SET_PDEATHSIG, death_signal)
    if os.getppid() != owner:  # the owner died between the fork and the prctl: no signal will come
        os.kill(os.getpid(), death_signal)


def settable_signals() -> frozenset[int]:
    """The signals a program can handle, ignore or block.

    All but SIGKILL, SIGSTOP and the two real-time signals the C library keeps for itself (32 and 33 on Linux,
    which whoever started this process may have left ignored: nothing can reset them).
    """
    return frozenset(int(s) for s in signal.valid_signals()) - {signal.SIGKILL, signal.SIGSTOP}


def _reset_signals() -> None:
    """In a forked child: every settable signal at its default disposition and none blocked (a fresh process)."""
    for number in settable_signals():
        signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def _child_setup(death_signal: signal.Signals | None, fresh_signals: bool) -> Callable[[], None] | None:
    """The ``preexec_fn`` that :func:`spawn`'s options need, or ``None`` if they need none."""
    owner = os.getpid()
    die = death_signal is not None and _prctl is not None
    if not die and not fresh_signals:
        return None

    def in_child() -> None:
        if fresh_signals:
            _reset_signals()
        if die:
            assert death_signal is not None
            _die_with(owner, int(death_signal))

    return in_child


def spawn(
    args: Sequence[str],
    *,
    death_signal: signal.Signals | None = signal.SIGTERM,
    fresh_signals: bool = False,
    **popen_kwargs: Any,
) -> subprocess.Popen[bytes]:
    """Start ``args`` as a child that dies with this process (all its threads) and not with the calling thread.

    The child is forked by :func:`spawner_thread`, so the parent-death signal it gets here (``death_signal``) or
    sets itself (bwrap's ``--die-with-parent``) fires only once the whole process is gone, SIGKILL included.
    Waiting for it, signalling it and reading its pipes work from any thread, as with any ``Popen``.

    Args:
        args: The command line.
        death_signal: The signal the child gets when this process dies (SIGTERM lets a server shut down
            cleanly); ``None`` sets none, for a child that sets its own (``bwrap --die-with-parent``).
        fresh_signals: Start the child with every signal at its default disposition and none blocked, whatever
            this process ignores or its spawning thread blocks (see the module docstring). Off by default: a
            server should keep what its owner was started with (``nohup``'s ignored SIGHUP).
        **popen_kwargs: Passed to :class:`subprocess.Popen` (``preexec_fn`` is taken by these options).

    Raises:
        OSError: If the command cannot be started, as from ``Popen``.
    """
    if "preexec_fn" in popen_kwargs:
        raise TypeError(
            "spawn() sets the child's preexec_fn itself (death_signal=..., fresh_signals=...); pass no preexec_fn."
        )
    preexec = _child_setup(death_signal, fresh_signals)
    if preexec is not None:
        popen_kwargs["preexec_fn"] = preexec
    return _spawner().call(lambda: subprocess.Popen(args, **popen_kwargs))


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs: the one liveness rule for every pid this project checks.

    - A zombie (``Z``) or a dead task (``X``) does not run: a killed process shows as one until its parent
      reaps it, which may take long (an init that reaps lazily, a subreaper that never does, a controller that
      has not waited on its killed worker yet), and it can no longer clean up after itself or answer.
    - A process of another user runs (``EPERM`` on the signal check; procfs mounted with ``hidepid`` hides it).
    - ``0`` and negative numbers name no process (``os.kill`` would read them as process groups).
    - Without procfs (not Linux) the signal check alone decides.
    """
    if pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        # The state follows the command name, which is in parentheses and may itself contain ") ".
        return stat.rpartition(b")")[2].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        pass  # no procfs, or a pid it hides from us: the signal check decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:  # not a pid at all
        return False
    return True


def stop_process(process: subprocess.Popen[Any], *, timeout_s: float = 30.0) -> None:
    """Terminate ``process`` and wait for it; kill it if it has not exited after ``timeout_s``."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class _Server(Protocol):
    @property
    def running(self) -> bool: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=_Server)


class SharedServer(Generic[S]):
    """One server per Python process, shared by reference count and stopped with its last user or at exit.

    Backends that start a heavyweight server (MariaDB, Virtuoso) hold it here so that every env of a process
    uses the same one; a server found dead is replaced on the next :meth:`acquire`.
    """

    def __init__(self, start: Callable[[], S]) -> None:
        """Remember how to start a server (a callable returning a started one); nothing starts yet."""
        self._start = start
        self._lock = threading.Lock()
        self._server: S | None = None
        self._users = 0
        atexit.register(self.stop)

    def acquire(self) -> S:
        """The shared server, started on first use; pair every call with :meth:`release`."""
        with self._lock:
            if self._server is None or not self._server.running:
                self._server = self._start()
            self._users += 1
            return self._server

    def release(self) -> None:
        """Drop one user; the last one stops the server."""
        with self._lock:
            self._users = max(self._users - 1, 0)
            if self._users == 0:
                self._stop_locked()

    def stop(self) -> None:
        """Stop the server now, whoever still uses it (interpreter exit)."""
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            server.stop()
