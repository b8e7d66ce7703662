"""A private Virtuoso server loaded with the offline graphs, for the ``sparql`` backend.

Upstream serves Freebase from OpenLink Virtuoso 7.2.5; Debian ships the same engine
(``virtuoso-opensource-7-bin``). :class:`VirtuosoServer` starts ``virtuoso-t`` in the foreground with its own
database directory, listening on 127.0.0.1 only (ISQL and HTTP ports from :class:`VirtuosoConfig`), and loads
each sample's offline graph into the named graph ``urn:agentrl:kg:<split>:<index>``, which the ``sparql``
backend sends as ``default-graph-uri``. So the ``sparql`` backend runs upstream's own SPARQL text on
upstream's engine, over the same triples the in-process backend reads.

    with VirtuosoServer(VirtuosoConfig()) as server:
        server.load("test", load_offline_graphs(data, "test").graphs)
        env = KGEnv(split="test", sparql_url=server.url)
"""

from __future__ import annotations

import logging
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

import httpx

from agentrl_envs.core.errors import BackendUnavailableError, InfraError
from agentrl_envs.core.processes import SharedServer, spawn, stop_process
from agentrl_envs.tasks.kg.backends import OFFLINE_GRAPH_IRI
from agentrl_envs.tasks.kg.graph import KGGraph

__all__ = ["VirtuosoConfig", "VirtuosoServer", "acquire_server", "release_server"]

logger = logging.getLogger(__name__)

_INSTALL_HINT = "install Debian's Virtuoso 7: apt-get install virtuoso-opensource-7-bin (scripts/bootstrap.sh does)"

_INI = """\
[Database]
DatabaseFile = {dir}/virtuoso.db
ErrorLogFile = {dir}/virtuoso.log
LockFile = {dir}/virtuoso.lck
TransactionFile = {dir}/virtuoso.trx
xa_persistent_file = {dir}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {dir}/virtuoso-temp.db
TransactionFile = {dir}/virtuoso-temp.trx
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{isql_port}
DisableUnixSocket = 1
NumberOfBuffers = {buffers}
MaxDirtyBuffers = {dirty_buffers}
DirsAllowed = ., {dir}
ThreadsPerQuery = 1
CheckpointInterval = 0

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {dir}
ServerThreads = 4
MaxClientConnections = 8

[SPARQL]
ResultSetMaxRows = 100000
MaxQueryExecutionTime = 60
"""


@dataclass
class VirtuosoConfig:
    """Where and how the private Virtuoso runs."""

    isql_port: int = field(default=0, metadata={"help": "ISQL (SQL) port on 127.0.0.1; 0: a free one"})
    http_port: int = field(default=0, metadata={"help": "HTTP port on 127.0.0.1 (endpoint /sparql); 0: a free one"})
    directory: Path | None = field(
        default=None, metadata={"help": "database directory (kept); None: a temporary one, deleted on stop"}
    )
    buffers: int = field(default=20_000, metadata={"help": "8 KiB page buffers (20000 = 160 MiB)"})
    start_timeout_s: float = field(default=60.0, metadata={"help": "how long start-up may take"})


class VirtuosoServer:
    """One ``virtuoso-t`` process with its own database directory (a context manager)."""

    def __init__(self, config: VirtuosoConfig | None = None) -> None:
        """Locate the binaries (nothing starts yet).

        Raises:
            BackendUnavailableError: If ``virtuoso-t`` or ``isql-vt`` is not installed.
        """
        self.config = config or VirtuosoConfig()
        if self.config.isql_port == 0 or self.config.http_port == 0:
            self.config.isql_port = self.config.isql_port or _free_port()
            self.config.http_port = self.config.http_port or _free_port()
        self._loaded: dict[str, object] = {}
        self._load_lock = threading.Lock()
        self._server = _which("virtuoso-t")
        self._isql = _which("isql-vt")
        self._dir: Path | None = None
        self._own_dir = False
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The SPARQL endpoint, for ``KGEnv(sparql_url=...)``."""
        return f"http://127.0.0.1:{self.config.http_port}/sparql"

    @property
    def running(self) -> bool:
        """Whether the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def start(self) -> VirtuosoServer:
        """Start the server; returns once the SPARQL endpoint answers.

        Raises:
            InfraError: If the server exits or does not answer in time (the message holds its log's tail).
        """
        if self.config.directory is None:
            self._dir, self._own_dir = Path(tempfile.mkdtemp(prefix="agentrl-virtuoso-")), True
        else:
            self._dir = self.config.directory
            self._dir.mkdir(parents=True, exist_ok=True)
        c = self.config
        ini = _INI.format(
            dir=self._dir,
            isql_port=c.isql_port,
            http_port=c.http_port,
            buffers=c.buffers,
            dirty_buffers=c.buffers * 3 // 4,
        )
        (self._dir / "virtuoso.ini").write_text(ini, encoding="utf-8")
        try:
            # -f: stay in the foreground, so this process owns the server, which is stopped (SIGTERM) when this
            # process dies, whichever thread started it.
            self._process = spawn(
                [self._server, "-f", "-c", "virtuoso.ini"],
                cwd=self._dir,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        logger.info("Virtuoso started at %s (pid %s)", self.url, self._process.pid)
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.config.start_timeout_s
        while time.monotonic() < deadline:
            if not self.running:
                raise InfraError(f"virtuoso-t exited during start-up (ports in use?): {self._log_tail()}")
            try:
                if httpx.get(self.url, params={"query": "ASK {}"}, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:  # not listening yet
                pass
            time.sleep(0.2)
        raise InfraError(f"Virtuoso did not answer within {self.config.start_timeout_s} s: {self._log_tail()}")

    def load(self, split: str, graphs: Sequence[KGGraph]) -> float:
        """Load (or replace) the offline graphs of a split, one named graph per sample.

        Returns:
            Seconds the load took.

        Raises:
            InfraError: If the server is not running or rejects the data.
        """
        if self._dir is None or not self.running:
            raise InfraError("Virtuoso is not running; call start() first.")
        started = time.perf_counter()
        data = self._dir / "data"
        data.mkdir(exist_ok=True)
        statements = ["log_enable(2);"]  # autocommit, no transaction log: a bulk load
        for index, graph in enumerate(graphs):
            path = data / f"{split}-{index}.nt"
            path.write_text(graph.ntriples(), encoding="utf-8")
            iri = OFFLINE_GRAPH_IRI.format(split=split, index=index)
            statements.append(f"SPARQL CLEAR GRAPH <{iri}>;")
            statements.append(f"DB.DBA.TTLP(file_to_string_output('{path}'), '', '{iri}', 0);")
        self.isql("\n".join(statements))
        seconds = time.perf_counter() - started
        logger.info("loaded %d %s graphs into Virtuoso in %.1f s", len(graphs), split, seconds)
        return seconds

    def ensure_loaded(self, split: str, key: object, graphs: Callable[[], Sequence[KGGraph]]) -> None:
        """Load ``graphs()`` for ``split`` unless graphs with the same ``key`` (data root, seed, train file) are loaded.

        Envs sharing one server call this before each episode; a split loads once, under a lock.
        """
        with self._load_lock:
            if self._loaded.get(split) != key:
                self.load(split, graphs())
                self._loaded[split] = key

    def isql(self, script: str) -> str:
        """Run an SQL script as ``dba`` through ``isql-vt``; returns its output.

        Raises:
            InfraError: If a statement fails.
        """
        assert self._dir is not None
        path = self._dir / "script.sql"
        path.write_text(script + "\n", encoding="utf-8")
        command = [self._isql, f"127.0.0.1:{self.config.isql_port}", "dba", "dba", str(path)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        output = done.stdout + done.stderr
        if done.returncode != 0 or "*** Error" in output:
            raise InfraError(f"isql-vt failed ({done.returncode}): {output[-2000:]}")
        return output

    def stop(self) -> None:
        """Stop the server and delete a temporary database directory (idempotent)."""
        if self._process is not None:
            stop_process(self._process)
            self._process = None
        if self._dir is not None and self._own_dir:
            shutil.rmtree(self._dir, ignore_errors=True)
        self._dir = None

    def _log_tail(self) -> str:
        log = self._dir / "virtuoso.log" if self._dir else None
        return log.read_text(errors="replace")[-2000:] if log and log.exists() else "(no log)"

    def __enter__(self) -> VirtuosoServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()


_server: SharedServer[VirtuosoServer] = SharedServer(lambda: VirtuosoServer().start())
acquire_server = _server.acquire
"""The process's shared server (free ports, a temporary directory), started on first use.

Pair every call with :func:`release_server`; the last release stops it.
"""
release_server = _server.release
"""Drop one user of the shared server; the last one stops it."""


def _free_port() -> int:
    """A TCP port the OS reports free on 127.0.0.1 (released again for the server to take)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _which(program: str) -> str:
    path = shutil.which(program)
    if path is None:
        raise BackendUnavailableError(f"The sparql backend's test server needs {program!r}; {_INSTALL_HINT}")
    return path
