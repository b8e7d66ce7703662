"""The ``vllm`` rollout engine, colocate mode: vLLM's ``AsyncLLM`` inside the trainer's process, no HTTP.

The trainer's process holds vLLM's async front end (``vllm.v1.engine.async_llm.AsyncLLM``: input processing,
output collection) and vLLM starts its engine core (scheduler, model runner, KV cache) as a child process, as it
always does in vLLM v1; token ids go in and ids plus log-probs come back over vLLM's own ZMQ channel. This module
therefore needs ``vllm`` importable in the trainer's interpreter (GPU: ``pip install vllm``; CPU: run the trainer
from the venv ``scripts/vllm_cpu_env.sh`` builds, see docs/deployment.md).

The ``AsyncLLM`` lives on an event loop of its own (a daemon thread): vLLM binds its output handler to the loop
that first uses it, while the rollout producer, tests and the trainer call from other loops and threads.
:meth:`VLLMColocateEngine.agenerate` hands each request to that loop and awaits the answer from the caller's loop.

Weight updates (the path and why): the same worker extension as server mode
(:mod:`agentrl_trainer.engines.vllm_worker_ext`), called with ``AsyncLLM.collective_rpc`` instead of the server's
``/collective_rpc`` endpoint: the state dict goes to one safetensors file in ``/dev/shm`` and every worker loads
it with vLLM's layerwise reload, then ``reset_prefix_cache`` drops KV blocks of the old weights. The engine core
runs utility calls between two engine steps, so requests in flight are not dropped. One code path for both modes
means the CPU tests of one cover the other's loading; vLLM's ``init_weight_transfer_engine``/``update_weights``
backends (NCCL, CUDA IPC) need CUDA, so CPU CI could not exercise them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agentrl_trainer.engines.vllm_engine import StagedWeightUpdates, default_weights_dir
from agentrl_trainer.engines.vllm_server import VLLMServerConfig, engine_flags
from agentrl_trainer.types import Generation

if TYPE_CHECKING:
    pass

__all__ = ["WORKER_EXTENSION", "VLLMColocateEngine", "engine_args"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Importable from vLLM's engine-core process, which runs this same interpreter with the same sys.path.
WORKER_EXTENSION = "agentrl_trainer.engines.vllm_worker_ext.WeightSyncExtension"


def engine_args(config: VLLMServerConfig) -> Any:
    """VLLM ``AsyncEngineArgs`` for ``config``, parsed from the same flags server mode passes to ``vllm serve``.

    Parsing the flags (rather than building the dataclass by hand) lets ``vllm_server_args`` mean the same thing
    in both modes.
    """
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.platforms import current_platform
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    flags = engine_flags(config, worker_extension=WORKER_EXTENSION)
    if current_platform.is_cpu() and "--kv-cache-memory-bytes" not in flags:
        # Server mode sets VLLM_CPU_KVCACHE_SPACE in the server's environment; here the process is the trainer's.
        flags += ["--kv-cache-memory-bytes", str(config.kv_cache_gib * 2**30)]
    parser = AsyncEngineArgs.add_cli_args(FlexibleArgumentParser())
    args = AsyncEngineArgs.from_cli_args(parser.parse_args(flags))
    args.disable_log_stats = True
    return args


class VLLMColocateEngine(StagedWeightUpdates):
    """A :class:`~agentrl_trainer.engines.protocol.RolloutEngine` over an in-process ``AsyncLLM`` (module docstring)."""

    def __init__(
        self,
        config: VLLMServerConfig,
        *,
        eos_token_id: int,
        name: str = "policy",
        temperature: float = 1.0,
        version: int = 0,
        request_timeout_s: float = 600.0,
        sampling_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        """Start vLLM on ``config.model`` (about as long as a server's start-up: its engine core is a process).

        Args:
            config: Model, dtype, lengths, KV cache size and extra engine flags (the same as server mode's).
            eos_token_id: End-of-turn token; generation stops there (it is kept in the returned ids).
            name: Engine name recorded on every turn it samples.
            temperature: Sampling temperature; 0 means greedy (the log-probs are then the raw model's).
            version: Policy version of the weights in ``config.model``.
            request_timeout_s: Longest a weight update may take.
            sampling_overrides: More ``SamplingParams`` fields for every request (e.g. ``{"min_tokens": 8}`` in
                tests); none may change the distribution tokens are drawn from.

        Raises:
            ImportError: If vllm is not importable here (run the trainer from vLLM's environment).
        """
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}.")
        self.name = name
        self.config = config
        self.eos_token_id = eos_token_id
        self.temperature = temperature
        self.request_timeout_s = request_timeout_s
        self.sampling_overrides = dict(sampling_overrides or {})
        self.weights_dir: Path = default_weights_dir()
        self._version = version
        self._update_lock = threading.Lock()
        self._request_ids = itertools.count()
        self._closed = False
        self.generated_tokens = 0
        self.requests = 0
        self.last_update_s = 0.0
        self.last_update_bytes = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"vllm-{name}", daemon=True)
        self._thread.start()
        try:
            self._llm: Any = self._call(self._start(), timeout=config.startup_timeout_s)
        except BaseException:
            self._stop_loop()
            raise

    @property
    def version(self) -> int:
        """Policy version of the weights the engine holds."""
        return self._version

    async def _start(self) -> Any:
        from vllm.v1.engine.async_llm import AsyncLLM

        # Created on the engine's own loop, so vLLM's output handler runs there.
        return AsyncLLM.from_engine_args(engine_args(self.config))

    def _call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the engine's loop from another thread and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # ----------------------------------------------------------------- generation

    def sampling_params(self, max_new_tokens: int) -> Any:
        """VLLM ``SamplingParams`` for one generation: plain temperature sampling, the sampled token's log-prob."""
        from vllm import SamplingParams

        return SamplingParams(
            max_tokens=max_new_tokens,
            temperature=self.temperature,
            top_p=1.0,
            top_k=0,
            logprobs=0,
            stop_token_ids=[self.eos_token_id],
            skip_special_tokens=False,
            detokenize=False,
            **self.sampling_overrides,
        )

    async def _generate(self, prompt_ids: list[int], max_new_tokens: int, lora_request: Any) -> Any:
        final = None
        request_id = f"{self.name}-{next(self._request_ids)}"
        async for output in self._llm.generate(
            {"prompt_token_ids": list(prompt_ids)},
            self.sampling_params(max_new_tokens),
            request_id,
            lora_request=lora_request,
        ):
            final = output
        if final is None:
            raise RuntimeError(f"vLLM returned no output for request {request_id}.")
        return final.outputs[0]

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        """Sample one continuation of ``prompt_ids`` (from any event loop; cancelling it aborts the request).

        Raises:
            RuntimeError: If the engine is closed, or vLLM returned no or incomplete log-probs.
        """
        return await self.generate_as(prompt_ids, max_new_tokens=max_new_tokens, name=self.name, version=self._version)

    async def generate_as(
        self, prompt_ids: list[int], *, max_new_tokens: int, name: str, version: int, lora: Any = None
    ) -> Generation:
        """:meth:`agenerate` with a given engine name, version tag and LoRA adapter (for adapter-versioned engines)."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}.")
        if self._closed:
            raise RuntimeError(f"vLLM engine {self.name!r} is closed.")
        future = asyncio.run_coroutine_threadsafe(self._generate(prompt_ids, max_new_tokens, lora), self._loop)
        completion = await asyncio.wrap_future(future)
        token_ids = tuple(int(t) for t in completion.token_ids)
        positions = completion.logprobs or []
        if len(positions) != len(token_ids):
            raise RuntimeError(f"vLLM returned {len(token_ids)} tokens but {len(positions)} log-prob positions.")
        logprobs = tuple(float(position[t].logprob) for position, t in zip(positions, token_ids, strict=True))
        self.requests += 1
        self.generated_tokens += len(token_ids)
        finish = "stop" if token_ids and token_ids[-1] == self.eos_token_id else "length"
        return Generation(token_ids=token_ids, logprobs=logprobs, version=version, engine=name, finish_reason=finish)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        """Call ``AsyncLLM.<method>(*args)`` on the engine's loop from another thread (e.g. ``add_lora``)."""
        if self._closed:
            raise RuntimeError(f"vLLM engine {self.name!r} is closed.")
        return self._call(getattr(self._llm, method)(*args), timeout=timeout or self.request_timeout_s)

    # ----------------------------------------------------------------- LoRA adapters (engines.vllm_lora)

    def add_lora(self, name: str, lora_id: int, path: Path) -> Any:
        """Load the peft adapter directory ``path`` as ``LoRARequest(name, lora_id, path)``; returns the request.

        The engine must run with ``--enable-lora``; ``lora_id`` must be unique for this engine's lifetime.
        """
        from vllm.lora.request import LoRARequest

        request = LoRARequest(name, lora_id, str(path))
        self.call("add_lora", request)
        return request

    def remove_lora(self, request: Any) -> None:
        """Unload the adapter :meth:`add_lora` returned ``request`` for."""
        self.call("remove_lora", request.lora_int_id)

    # ----------------------------------------------------------------- weights

    def _load_weights_file(self, path: Path) -> None:
        try:
            rpc = self._llm.collective_rpc("agentrl_load_weights", timeout=self.request_timeout_s, args=(str(path),))
            self._call(rpc, timeout=self.request_timeout_s)
        except Exception as e:
            raise RuntimeError(f"weight update of vLLM engine {self.name!r} failed: {e}") from e
        self._call(self._llm.reset_prefix_cache(), timeout=self.request_timeout_s)

    # ----------------------------------------------------------------- shutdown

    def close(self) -> None:
        """Shut vLLM down (its engine-core process too) and stop the engine's loop; later updates are no-ops."""
        with self._update_lock:
            if self._closed:
                return
            self._closed = True
        try:
            self._call(self._shutdown(), timeout=60.0)
        finally:
            self._stop_loop()

    async def _shutdown(self) -> None:
        llm, self._llm = self._llm, None
        llm.shutdown()

    def _stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30.0)
        if not self._thread.is_alive():
            self._loop.close()

    async def aclose(self) -> None:
        """:meth:`close`, from an event loop."""
        await asyncio.to_thread(self.close)
