"""The ``vllm`` rollout engine, server mode: a vLLM OpenAI-compatible server driven with token ids over HTTP.

Generation: ``POST /v1/completions`` with the prompt as token ids, ``return_token_ids`` and ``logprobs=0``, so
the engine returns exactly the ids vLLM sampled (no detokenize/retokenize round trip) and each one's log-prob
under the sampling distribution (the server runs with ``--logprobs-mode processed_logprobs``, i.e. after
temperature, which is what the hf engine returns too).

Weight updates (the path and why): the trainer's state dict is written as one safetensors file (in
``/dev/shm`` when it exists), and the server's dev-mode ``/collective_rpc`` endpoint calls our worker extension
(:mod:`agentrl_trainer.engines.vllm_worker_ext`), which feeds it to the model's own ``load_weights``; then
``/reset_prefix_cache`` drops KV blocks computed with the old weights. vLLM runs such calls between two engine
steps, so in-flight requests are not dropped: their remaining tokens come from the new weights. We use this
rather than vLLM's built-in weight-transfer backends (``/init_weight_transfer_engine`` + ``/update_weights``
with ``nccl`` or CUDA ``ipc``) or TRL's ``VLLMClient`` (NCCL communicator) because those need CUDA, and CPU CI
must exercise the real path; it needs only a filesystem both sides see (same host, or a shared mount). On GPU
clusters the NCCL backend avoids the file copy (docs/deployment.md).

A generation's ``version`` is the policy version loaded when the request was sent: for a request that spans
an update, that is the oldest weights that contributed, which is the conservative choice for staleness.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from agentrl_trainer.engines.vllm_server import VLLMServer, VLLMServerConfig
from agentrl_trainer.types import Generation

if TYPE_CHECKING:
    import torch

__all__ = ["StagedWeightUpdates", "VLLMServerEngine", "default_weights_dir", "save_state_dict"]

logger = logging.getLogger(__name__)


WEIGHTS_DIR_ENV = "AGENTRL_VLLM_WEIGHTS_DIR"


def default_weights_dir() -> Path:
    """Where weight files are staged: $AGENTRL_VLLM_WEIGHTS_DIR, else /dev/shm (tmpfs), else the temp dir."""
    if os.environ.get(WEIGHTS_DIR_ENV):  # servers on other hosts: a mount both sides see
        return Path(os.environ[WEIGHTS_DIR_ENV])
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


def save_state_dict(state_dict: Mapping[str, torch.Tensor], path: Path) -> int:
    """Write ``state_dict`` to ``path`` as safetensors (atomically), tied tensors once; returns the bytes written.

    Tied weights (e.g. ``lm_head.weight`` sharing ``embed_tokens``) share storage, which safetensors refuses;
    the model's ``load_weights`` re-ties them, so the first name of each storage is kept.
    """
    from safetensors.torch import save_file

    seen: set[tuple[int, int]] = set()
    tensors: dict[str, torch.Tensor] = {}
    for name, tensor in state_dict.items():
        key = (tensor.untyped_storage().data_ptr(), int(tensor.storage_offset()))
        if key in seen:
            continue
        seen.add(key)
        tensors[name] = tensor.detach().to("cpu").contiguous()
    tmp = path.with_name(path.name + ".tmp")
    save_file(tensors, str(tmp))
    tmp.replace(path)
    return path.stat().st_size


class StagedWeightUpdates:
    """``update_weights`` for both vLLM modes, through a staged safetensors file.

    The engine's workers load the file through the worker extension (:meth:`_load_weights_file`: by HTTP in
    server mode, through ``AsyncLLM.collective_rpc`` in process).
    """

    name: str
    weights_dir: Path
    last_update_s: float
    last_update_bytes: int
    _version: int
    _update_lock: threading.Lock
    _closed: bool

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Load ``state_dict`` into vLLM's workers (see the module docstring); requests in flight keep going.

        Raises:
            RuntimeError: If vLLM refused the update; the engine keeps its old version.
        """
        with self._update_lock:
            if self._closed:
                # The rollout loop has shut down (it closes its engines), and its error, if any, is the one to
                # report: an update of a stopped engine would only mask it (e.g. with "connection refused").
                self._version = version
                return
            started = time.perf_counter()
            self.weights_dir.mkdir(parents=True, exist_ok=True)
            path = self.weights_dir / f"agentrl-{os.getpid()}-{id(self):x}-{self.name}-v{version}.safetensors"
            try:
                self.last_update_bytes = save_state_dict(state_dict, path)
                self._load_weights_file(path)
            finally:
                path.unlink(missing_ok=True)
            self._version = version
            self.last_update_s = time.perf_counter() - started
        logger.debug("engine %s now at policy_version=%d (%.3fs)", self.name, version, self.last_update_s)

    def _load_weights_file(self, path: Path) -> None:
        """Have every worker load ``path`` and drop the prefix cache (computed with the old weights)."""
        raise NotImplementedError


class VLLMServerEngine(StagedWeightUpdates):
    """A :class:`~.protocol.RolloutEngine` backed by one vLLM server (see the module docstring)."""

    def __init__(
        self,
        base_url: str,
        *,
        eos_token_id: int,
        name: str = "policy",
        temperature: float = 1.0,
        version: int = 0,
        server: VLLMServer | None = None,
        request_timeout_s: float = 600.0,
        weights_dir: Path | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        """Drive the server at ``base_url``.

        Args:
            base_url: ``http://host:port`` of a server started with :class:`VLLMServer` (or the same flags).
            eos_token_id: End-of-turn token; generation stops there (it is kept in the returned ids).
            name: Engine name recorded on every turn it samples.
            temperature: Sampling temperature; 0 means greedy (the log-probs are then the raw model's).
            version: Policy version of the weights the server starts with.
            server: The server process, when this engine owns it (stopped by :meth:`aclose`).
            request_timeout_s: Longest a generation or weight update may take.
            weights_dir: Where weight files are staged for the server (default: $AGENTRL_VLLM_WEIGHTS_DIR, else
                /dev/shm, else the temp dir); the server must see the same path.
            extra_body: More vLLM sampling parameters for every request (e.g. ``{"ignore_eos": true}`` in tests);
                none may change the distribution tokens are drawn from, or the log-probs stop matching the loss.
        """
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}.")
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.eos_token_id = eos_token_id
        self.temperature = temperature
        self.server = server
        self.request_timeout_s = request_timeout_s
        self.weights_dir = weights_dir or default_weights_dir()
        self.extra_body = dict(extra_body or {})
        self._version = version
        self._update_lock = threading.Lock()
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self.generated_tokens = 0
        self.requests = 0
        self.last_update_s = 0.0
        self.last_update_bytes = 0

    @classmethod
    def launch(cls, config: VLLMServerConfig, *, eos_token_id: int, **kwargs: Any) -> VLLMServerEngine:
        """Start a server for ``config`` and return an engine that owns it."""
        server = VLLMServer(config).start()
        return cls(server.base_url, eos_token_id=eos_token_id, server=server, **kwargs)

    @property
    def version(self) -> int:
        """Policy version of the weights the server holds."""
        return self._version

    # ----------------------------------------------------------------- generation

    def _async_client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            # One client per event loop: a client's connections belong to the loop that opened them.
            self._client = httpx.AsyncClient(
                base_url=self.base_url,
                timeout=httpx.Timeout(self.request_timeout_s, connect=10.0),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
            )
            self._client_loop = loop
        return self._client

    def completion_request(self, prompt_ids: list[int], max_new_tokens: int, model: str = "policy") -> dict[str, Any]:
        """The ``/v1/completions`` body for one generation (``model``: the served name, or a loaded LoRA's)."""
        return {
            "model": model,
            "prompt": list(prompt_ids),
            "max_tokens": max_new_tokens,
            "temperature": self.temperature,
            "top_p": 1.0,
            "top_k": -1,
            "logprobs": 0,
            "return_token_ids": True,
            "skip_special_tokens": False,
            "stop_token_ids": [self.eos_token_id],
            **self.extra_body,
        }

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        """Sample one continuation of ``prompt_ids``.

        Raises:
            httpx.TransportError: The server cannot be reached (the router treats this as a dead replica).
            RuntimeError: The server answered with an error.
        """
        return await self.generate_as(prompt_ids, max_new_tokens=max_new_tokens, name=self.name, version=self._version)

    async def generate_as(
        self, prompt_ids: list[int], *, max_new_tokens: int, name: str, version: int, lora: str | None = None
    ) -> Generation:
        """:meth:`agenerate` with a given engine name, version tag and LoRA adapter (for adapter-versioned engines).

        Args:
            prompt_ids: The prompt's token ids.
            max_new_tokens: Most tokens to sample.
            name: Engine name recorded on the generation.
            version: Policy version recorded on the generation.
            lora: Name of an adapter loaded with :meth:`add_lora`; ``None`` samples from the served model.
        """
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}.")
        body = self.completion_request(prompt_ids, max_new_tokens, model=lora or "policy")
        response = await self._async_client().post("/v1/completions", json=body)
        if response.status_code != 200:
            raise RuntimeError(f"vLLM server {self.base_url} answered {response.status_code}: {response.text[:500]}")
        choice = response.json()["choices"][0]
        token_ids = tuple(int(t) for t in choice["token_ids"])
        raw = choice["logprobs"]["token_logprobs"]
        if len(raw) != len(token_ids) or any(lp is None for lp in raw):
            raise RuntimeError(
                f"vLLM returned {len(token_ids)} tokens but log-probs {raw[:8]}...: a missing or infinite log-prob "
                "usually means a low-precision dtype; serve the trainer's dtype (float32 on CPU)."
            )
        logprobs = tuple(float(lp) for lp in raw)
        self.requests += 1
        self.generated_tokens += len(token_ids)
        finish = "stop" if token_ids and token_ids[-1] == self.eos_token_id else "length"
        return Generation(token_ids=token_ids, logprobs=logprobs, version=version, engine=name, finish_reason=finish)

    # ----------------------------------------------------------------- weights

    def _load_weights_file(self, path: Path) -> None:
        with httpx.Client(base_url=self.base_url, timeout=self.request_timeout_s) as client:
            rpc = {"method": "agentrl_load_weights", "args": [str(path)], "timeout": self.request_timeout_s}
            r = client.post("/collective_rpc", json=rpc)
            if r.status_code != 200:
                raise RuntimeError(f"weight update on {self.base_url} failed ({r.status_code}): {r.text[:500]}")
            r = client.post("/reset_prefix_cache")
            if r.status_code != 200:
                raise RuntimeError(f"prefix-cache reset on {self.base_url} failed ({r.status_code}): {r.text}")

    # ----------------------------------------------------------------- LoRA adapters (engines.vllm_lora)

    def add_lora(self, name: str, lora_id: int, path: Path) -> str:
        """Load the peft adapter directory ``path`` under ``name`` (``POST /v1/load_lora_adapter``); returns ``name``.

        The server must run with ``--enable-lora`` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`` (what
        :class:`VLLMServer` sets for ``--enable-lora``), and see ``path``. The server numbers adapters itself, so
        ``lora_id`` is unused here (colocate mode needs it).

        Raises:
            RuntimeError: If the server refused the adapter (or cannot be reached: the router marks it dead).
        """
        body = {"lora_name": name, "lora_path": str(path)}
        self._admin_post("/v1/load_lora_adapter", body, f"loading LoRA adapter {name!r}")
        return name

    def remove_lora(self, name: str) -> None:
        """Unload the adapter loaded as ``name`` (``POST /v1/unload_lora_adapter``).

        In vLLM 0.32 this drops the name from the server (no request can name it any more); the weights leave
        the engine's adapter cache (``--max-cpu-loras``, default ``--max-loras``) as newer adapters push them
        out, least recently used first, so memory stays bounded.

        Raises:
            RuntimeError: If the server refused (e.g. no such adapter).
        """
        self._admin_post("/v1/unload_lora_adapter", {"lora_name": name}, f"unloading LoRA adapter {name!r}")

    def _admin_post(self, path: str, body: Mapping[str, Any], what: str) -> None:
        # A blocking client of its own: these run on the trainer's and the adapter pool's threads, not the loop.
        try:
            r = httpx.post(f"{self.base_url}{path}", json=dict(body), timeout=self.request_timeout_s)
        except httpx.HTTPError as e:
            raise RuntimeError(f"{what} on {self.base_url} failed: {e!r}") from e
        if r.status_code != 200:
            # FastAPI's answer for a route the server does not have (vLLM's own 404s name the adapter).
            no_route = r.status_code == 404 and r.text.replace(" ", "") == '{"detail":"NotFound"}'
            hint = " (serve with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True)" if no_route else ""
            raise RuntimeError(f"{what} on {self.base_url} failed ({r.status_code}): {r.text[:500]}{hint}")

    async def aclose(self) -> None:
        """Close the HTTP client, and stop the server when this engine owns it (later updates are no-ops)."""
        if self.server is not None:
            self._closed = True
        if self._client is not None:
            try:
                await self._client.aclose()
            except RuntimeError:  # its loop is gone; the sockets went with it
                pass
            self._client = None
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
            self.server = None
