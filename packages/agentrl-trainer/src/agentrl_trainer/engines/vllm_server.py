"""Start and stop one vLLM OpenAI-compatible server process (server mode of the ``vllm`` rollout engine).

The server runs in vLLM's own interpreter: ``AGENTRL_VLLM_PYTHON`` if set, else this interpreter when it can
import ``vllm`` (a GPU machine with ``pip install vllm``), else the CPU virtualenv that
``scripts/vllm_cpu_env.sh`` builds under the cache dir. It is started with the dev-mode endpoints on
(``collective_rpc``, ``reset_prefix_cache``) and this package's worker extension, which is how new weights
get in (see :mod:`agentrl_trainer.engines.vllm_worker_ext`); with ``--enable-lora`` also with runtime LoRA
loading on, which is how a LoRA policy's adapters get in (see :mod:`agentrl_trainer.engines.vllm_lora`).
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from agentrl_envs.core import resolve_cache_dir

__all__ = ["VLLMServer", "VLLMServerConfig", "engine_flags", "vllm_python"]

logger = logging.getLogger(__name__)

VLLM_PYTHON_ENV = "AGENTRL_VLLM_PYTHON"
_ENV_SCRIPT = Path(__file__).resolve().parents[5] / "scripts" / "vllm_cpu_env.sh"
_EXTENSION_DIR = Path(__file__).resolve().parent


def vllm_python() -> str:
    """The interpreter that runs vLLM servers (see the module docstring); builds the CPU venv on first use.

    Raises:
        RuntimeError: If no interpreter with vLLM can be found or built.
    """
    explicit = os.environ.get(VLLM_PYTHON_ENV)
    if explicit:
        return explicit
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    if not _ENV_SCRIPT.is_file():
        raise RuntimeError(
            f"No vLLM found: install `vllm` (GPU) in this environment, or set {VLLM_PYTHON_ENV} to a python that "
            "can import vllm (scripts/vllm_cpu_env.sh in the AgentRL repository builds one for CPUs)."
        )
    done = subprocess.run(["bash", str(_ENV_SCRIPT)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{_ENV_SCRIPT} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout.strip().splitlines()[-1]


def free_port() -> int:
    """A TCP port the OS says is free on the loopback interface."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class VLLMServerConfig:
    """How to launch one vLLM server."""

    model: str = field(metadata={"help": "Model directory (or hub id on machines with a hub) to serve."})
    host: str = field(default="127.0.0.1", metadata={"help": "Interface to bind."})
    port: int = field(default=0, metadata={"help": "TCP port; 0 picks a free one."})
    dtype: str = field(default="auto", metadata={"help": "Weights dtype (float32 on CPU for exact comparisons)."})
    max_model_len: int = field(default=4096, metadata={"help": "Longest prompt + completion, in tokens."})
    enforce_eager: bool = field(
        default=True, metadata={"help": "Skip torch.compile/CUDA graphs: starts in ~1 min instead of ~3 on CPU."}
    )
    kv_cache_gib: int = field(default=1, metadata={"help": "CPU only: KV cache GiB (VLLM_CPU_KVCACHE_SPACE)."})
    gpu_memory_utilization: float | None = field(
        default=None, metadata={"help": "GPU only: fraction of GPU memory vLLM may take (None: vLLM's default)."}
    )
    extra_args: list[str] = field(default_factory=list, metadata={"help": "More `vllm serve` flags, verbatim."})
    startup_timeout_s: float = field(default=600.0, metadata={"help": "Give up if /health is not up by then."})
    log_path: str | None = field(default=None, metadata={"help": "Server log file (default: under the cache dir)."})


def engine_flags(config: VLLMServerConfig, *, worker_extension: str) -> list[str]:
    """The vLLM engine flags both modes share (``vllm serve`` flags; colocate mode parses them as engine args).

    Args:
        config: The model, dtype, lengths and extra flags.
        worker_extension: Import path of the worker extension class that loads new weights.
    """
    flags = [
        "--model",
        config.model,
        "--dtype",
        config.dtype,
        "--max-model-len",
        str(config.max_model_len),
        # Log-probs of the distribution tokens were sampled from (after temperature), as the hf engine returns.
        "--logprobs-mode",
        "processed_logprobs",
        "--worker-extension-cls",
        worker_extension,
    ]
    if config.enforce_eager:
        flags.append("--enforce-eager")
    if config.gpu_memory_utilization is not None:
        flags += ["--gpu-memory-utilization", str(config.gpu_memory_utilization)]
    return flags + list(config.extra_args)


class VLLMServer:
    """One vLLM server process; a context manager that stops it (and its engine processes) on exit."""

    def __init__(self, config: VLLMServerConfig) -> None:
        """Prepare (not start) a server for ``config``."""
        self.config = config
        self.port = config.port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = Path(config.log_path or resolve_cache_dir() / "vllm-logs" / f"server-{self.port}.log")

    @property
    def base_url(self) -> str:
        """``http://host:port`` of the server."""
        return f"http://{self.config.host}:{self.port}"

    def command(self, python: str) -> list[str]:
        """The server's command line."""
        c = self.config
        server_flags = [
            "--served-model-name",
            "policy",
            "--host",
            c.host,
            "--port",
            str(self.port),
            "--disable-uvicorn-access-log",
        ]
        engine = engine_flags(c, worker_extension="vllm_worker_ext.WeightSyncExtension")
        return [python, "-m", "vllm.entrypoints.openai.api_server", *server_flags, *engine]

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The server's environment: ``base`` (this process's) with what the engine needs from vLLM."""
        env = dict(base)
        env["VLLM_SERVER_DEV_MODE"] = "1"  # collective_rpc and reset_prefix_cache, for weight updates
        env["VLLM_CPU_KVCACHE_SPACE"] = str(self.config.kv_cache_gib)
        if "--enable-lora" in self.config.extra_args:
            # /v1/load_lora_adapter and /v1/unload_lora_adapter: how LoRA policies push each version's adapter.
            env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] = "True"
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_EXTENSION_DIR), env.get("PYTHONPATH", "")) if p)
        env.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        # The workspace venv's variables must not leak into vLLM's interpreter.
        env.pop("VIRTUAL_ENV", None)
        return env

    def start(self) -> VLLMServer:
        """Launch the server and wait until it answers ``/health``.

        Raises:
            RuntimeError: If the process exits or is not healthy within ``startup_timeout_s``; the log tail says why.
        """
        if self.process is not None:
            raise RuntimeError("This vLLM server is already started.")
        if self.healthy():
            raise RuntimeError(f"Port {self.port} already serves something; stop it or choose another port.")
        python = vllm_python()
        env = self.environment(os.environ)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        logger.info("starting vLLM server on port %d (log: %s)", self.port, self.log_path)
        # A new session, so stop() can signal vLLM's engine-core and worker processes along with the API server.
        self.process = subprocess.Popen(
            self.command(python), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()
        # Never leave an orphan server behind, even when the caller forgets stop() or crashes.
        atexit.register(self.stop)
        deadline = time.monotonic() + self.config.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self.process = None
                raise RuntimeError(f"The vLLM server exited during start-up; log tail:\n{self.log_tail()}")
            if self.healthy():
                return self
            time.sleep(1.0)
        self.stop()
        raise RuntimeError(
            f"The vLLM server was not healthy within {self.config.startup_timeout_s:.0f}s; log tail:\n{self.log_tail()}"
        )

    def healthy(self) -> bool:
        """Whether ``/health`` answers 200."""
        try:
            return httpx.get(f"{self.base_url}/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop the server's whole process group: SIGTERM, then SIGKILL after ``timeout_s``."""
        if self.process is None:
            return
        pgid = self.process.pid
        try:
            os.killpg(pgid, signal.SIGTERM)
            self.process.wait(timeout_s)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            logger.warning("vLLM server on port %d ignored SIGTERM; killing it", self.port)
        try:
            os.killpg(pgid, signal.SIGKILL)  # stragglers (engine core, workers) of the group
        except ProcessLookupError:
            pass
        self.process.wait()
        self.process = None
        atexit.unregister(self.stop)

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the server log."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
