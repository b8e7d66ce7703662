"""The sandbox broker: one process that owns a task's sandbox pool for all of its worker processes.

``python -m agentrl_envs.sandboxes.broker --socket PATH --options JSON`` builds the pool that the
:class:`~agentrl_envs.sandboxes.options.SandboxOptions` describe (:func:`~agentrl_envs.sandboxes.options.open_pool`:
warm size, maximum, fillers, health checks, background closing, all unchanged) and serves it on a Unix
socket. Each connection is one lease (see :mod:`agentrl_envs.sandboxes.broker_client`): ``lease`` takes a
sandbox from the pool, the commands that follow run on it on the connection's thread, and the end of the
connection, whatever ended it (the episode's ``close``, the worker's exit or its ``kill -9``), gives the
sandbox back to the pool, which closes it and never leases it again. A ``stats`` connection reads the counters.

The sandboxes are the broker's children (bwrap's ``--die-with-parent`` and the owner pid the sweep reads name
the broker), so only the broker talks to the Docker engine. It exits, closing every sandbox, on SIGTERM or
SIGINT, or when the process that started it (the controller) is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from typing import Any

from agentrl_envs.core.errors import InfraError
from agentrl_envs.core.processes import stop_process
from agentrl_envs.sandboxes.broker_client import BrokerBackend, encode, recv_frame, send_frame
from agentrl_envs.sandboxes.options import SandboxOptions, open_pool
from agentrl_envs.sandboxes.pool import PooledSandbox, SandboxPool

__all__ = ["SandboxBroker", "main", "start_broker", "stop_broker"]

logger = logging.getLogger(__name__)


class SandboxBroker:
    """Serves ``pool`` on the Unix socket ``path`` until :meth:`close`."""

    def __init__(self, pool: SandboxPool, path: str) -> None:
        """Listen at ``path`` (replacing a stale socket file) and serve in a background thread."""
        self.pool = pool
        self.path = path
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        broker = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                broker._serve_connection(self.request)

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True
            block_on_close = False
            request_queue_size = 1024

        self._server = Server(path, Handler)
        os.chmod(path, 0o600)  # leases are root's business: the run directory's owner only
        self._thread = threading.Thread(target=self._server.serve_forever, name="sandbox-broker", daemon=True)
        self._thread.start()

    def _serve_connection(self, sock: socket.socket) -> None:
        box: PooledSandbox | None = None
        try:
            while (request := recv_frame(sock)) is not None:
                op = request.get("op")
                if op == "lease" and box is None:
                    box = self.pool.open(str(request["image"]))
                    send_frame(sock, {"shell_pid": box.shell_pid})
                elif op == "stats" and box is None:
                    send_frame(sock, {"stats": {image: asdict(s) for image, s in self.pool.stats().items()}})
                elif box is not None:
                    send_frame(sock, _run(box, op, request))
                else:
                    send_frame(sock, {"error": f"sandbox broker: {op!r} needs a leased sandbox; send lease first."})
        except InfraError as e:  # the lease failed: say why, then the connection ends
            with contextlib.suppress(OSError):
                send_frame(sock, {"error": str(e), "type": type(e).__name__})
        except (OSError, ValueError):  # the worker went away mid-frame (killed): give its sandbox back below
            logger.info("sandbox broker: a connection ended abruptly", exc_info=True)
        except Exception:  # a connection's bug must not take down the broker's other leases
            logger.exception("sandbox broker: a connection failed")
        finally:
            if box is not None:
                box.close()  # back to the pool, which closes it in the background; never leased again
            sock.close()

    def close(self) -> None:
        """Stop serving and close the pool (every sandbox, leased or idle)."""
        self._server.shutdown()
        self._server.server_close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self.pool.close()


def _run(box: PooledSandbox, op: Any, request: dict[str, Any]) -> dict[str, Any]:
    """One command on a leased sandbox; its errors are answered by name, the lease goes on."""
    try:
        if op == "run_shell":
            result = box.run_shell(str(request["script"]))
            return {"output": encode(result.output), "timed_out": result.timed_out, "notes": result.notes}
        if op == "exec":
            done = box.exec([str(arg) for arg in request["argv"]], timeout=request.get("timeout"))
            return {
                "exit_code": done.exit_code,
                "stdout": encode(done.stdout),
                "stderr": encode(done.stderr),
                "timed_out": done.timed_out,
                "oom_kills": done.oom_kills,
            }
        if op == "settle":
            box.settle()
            return {}
        if op == "alive":
            return {"alive": box.alive}
        return {"error": f"sandbox broker: unknown request {op!r}; known: run_shell, exec, settle, alive."}
    except InfraError as e:
        return {"error": str(e), "type": type(e).__name__}


def start_broker(
    options: SandboxOptions, path: str, *, timeout_s: float = 60.0
) -> tuple[subprocess.Popen[bytes], BrokerBackend]:
    """Start a broker process at ``path`` and wait until ``pool.images`` each have ``warm`` idle sandboxes.

    For scripts and tests; the controller starts (and restarts) its brokers itself.

    Returns:
        The process (stop it with :func:`stop_broker`) and a backend that leases from it.

    Raises:
        InfraError: If it exited or did not get ready within ``timeout_s``.
    """
    command = [sys.executable, "-m", "agentrl_envs.sandboxes.broker", "--socket", path]
    process = subprocess.Popen([*command, "--options", options.model_dump_json()], stdin=subprocess.DEVNULL)
    lease_timeout_s = options.pool.lease_timeout_s if options.pool is not None else None
    backend = BrokerBackend(path, name=options.backend, limits=options.limits, lease_timeout_s=lease_timeout_s)
    warm, images = (options.pool.warm, options.pool.images) if options.pool is not None else (0, [])
    deadline = time.monotonic() + timeout_s
    stats = None
    while process.poll() is None and time.monotonic() < deadline:
        with contextlib.suppress(InfraError):  # not listening yet
            stats = backend.stats()
            if all(image in stats and stats[image].idle >= warm for image in images):
                return process, backend
        time.sleep(0.05)
    stop_broker(process)
    raise InfraError(f"The sandbox broker at {path} did not get ready within {timeout_s:g} s (pool: {stats}).")


def stop_broker(process: subprocess.Popen[bytes], timeout_s: float = 60.0) -> None:
    """SIGTERM a broker process and wait for it (it closes every sandbox); kill it past ``timeout_s``."""
    stop_process(process, timeout_s=timeout_s)


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``--socket PATH --options JSON``; serves until SIGTERM/SIGINT or the parent's exit."""
    parser = argparse.ArgumentParser(prog="python -m agentrl_envs.sandboxes.broker")
    parser.add_argument("--socket", required=True, help="Unix socket path to listen on.")
    parser.add_argument("--options", required=True, help="The SandboxOptions as JSON (with a pool).")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s broker %(name)s: %(message)s")
    options = SandboxOptions.model_validate_json(args.options)
    parent = os.getppid()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    broker = SandboxBroker(open_pool(options), args.socket)
    logger.info("sandbox broker: serving a %s pool at %s", options.backend, args.socket)
    try:
        while not stop.is_set() and os.getppid() == parent:
            stop.wait(1.0)
    finally:
        broker.close()


if __name__ == "__main__":
    main()
