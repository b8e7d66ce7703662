"""The ``hf_process`` rollout engine: the ``hf`` engine's sampling in an engine process of its own.

On a machine without an accelerator the ``hf`` engine samples in the trainer's process, so generation and
the optimizer step share the same cores, torch's intra-op thread pool and the GIL: while one runs, the other
mostly waits, and the rollouts cannot keep ahead of training. Here each engine is a child process (spawned,
with its own ``torch.set_num_threads``), which is how the paper separates rollout and training hardware,
scaled down to CPU processes.

* Requests: the parent batches concurrent ``agenerate`` calls as the ``hf`` engine does and sends a batch of
  ``(prompt_ids, max_new_tokens)`` over a pipe; the child samples it with the same
  :func:`~agentrl_trainer.engines.hf.sample_batch` and sends the generations back. One batch is in
  flight per engine.
* Weights: one copy of the state dict lives in shared memory, made before the child starts. ``update_weights``
  copies the new weights into it and bumps a shared version counter, under a shared lock; between two batches
  the child sees the new version and loads the shared copy into its model under the same lock, so a batch is
  never sampled from half-updated weights and no weights travel through the pipe. The version recorded on a
  turn is the one the child actually loaded.
* Partial rollouts (``chunk_tokens``): the parent sends a batch one chunk at a time, and the child stops a
  chunk early once new weights are published, so it loads them between two chunks of a turn, as the ``hf``
  engine does (one code path, :func:`~agentrl_trainer.engines.hf.sample_in_chunks`).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.multiprocessing as mp

from agentrl_trainer.engines.hf import BatchingEngine, sample_batch
from agentrl_trainer.types import Generation

__all__ = ["ProcessEngine"]

logger = logging.getLogger(__name__)

_START_TIMEOUT_S = 300.0
"""A spawned child imports torch and transformers: seconds on an idle machine, minutes on a loaded one."""


class ProcessEngine(BatchingEngine):
    """Rollout engine sampling in a child process (see the module docstring)."""

    def __init__(
        self,
        model: torch.nn.Module,
        *,
        eos_token_id: int,
        pad_token_id: int,
        name: str = "policy",
        temperature: float = 1.0,
        max_batch_size: int = 32,
        version: int = 0,
        num_threads: int = 1,
        cpus: Sequence[int] | None = None,
        seed: int = 0,
        chunk_tokens: int = 0,
    ) -> None:
        """Start the engine process with ``model``'s current weights; returns once it is ready.

        Args:
            model: A transformers causal LM; the child builds the same architecture from its ``config``.
            eos_token_id: End-of-turn token.
            pad_token_id: Padding token for batched prompts.
            name: Engine name recorded on every turn it samples.
            temperature: Sampling temperature.
            max_batch_size: Most requests per ``generate`` call.
            version: Policy version of the initial weights.
            num_threads: ``torch.set_num_threads`` in the engine process.
            cpus: CPU cores the engine process runs on (``os.sched_setaffinity``); ``None``: those of this
                process. Keeping the engines and the trainer on separate cores stands in for separate rollout
                and training hardware on a CPU machine.
            seed: Seed of the engine process's sampling.
            chunk_tokens: Partial rollouts (see :class:`~agentrl_trainer.engines.hf.BatchingEngine`): each chunk
                is one request to the engine process, which loads new weights between two requests; 0: off.

        Raises:
            RuntimeError: If the engine process does not start.
        """
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0 for sampling, got {temperature}.")
        if num_threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads}.")
        # Checked against the machine, not this process's affinity: the trainer may have pinned itself elsewhere.
        if cpus is not None and not (cpus and set(cpus) <= set(range(os.cpu_count() or 1))):
            raise ValueError(
                f"engine cpus {list(cpus)} are not cores of this machine (0 to {(os.cpu_count() or 1) - 1})."
            )
        super().__init__(name=name, max_batch_size=max_batch_size, version=version, chunk_tokens=chunk_tokens)
        context = mp.get_context("spawn")  # fork would copy the trainer's threads and torch state
        self._shared = {k: v.detach().to("cpu", copy=True).share_memory_() for k, v in model.state_dict().items()}
        self._shared_version = context.Value("q", version, lock=False)
        self._weights_lock = context.Lock()
        self._conn, child_conn = context.Pipe()
        self._pipe_lock = threading.Lock()
        self.process_busy_s = 0.0
        """Seconds the engine process spent sampling (busy_s adds the round trips and this process's waits)."""
        settings = {
            "eos_token_id": eos_token_id,
            "pad_token_id": pad_token_id,
            "temperature": temperature,
            "engine": name,
            "num_threads": num_threads,
            "cpus": sorted(cpus) if cpus is not None else None,
            "seed": seed,
            "partial_rollouts": chunk_tokens > 0,
            # The model's own generation config: a config rebuilt from a training model's (use_cache=False under
            # gradient checkpointing) would otherwise make the engine decode without its KV cache.
            "generation_config": getattr(model, "generation_config", None),
        }
        self._process = context.Process(
            target=_engine_main,
            args=(child_conn, model.config, self._shared, self._shared_version, self._weights_lock, settings),
            name=f"agentrl-engine-{name}",
            daemon=True,
        )
        self._process.start()
        child_conn.close()
        try:
            if not self._conn.poll(_START_TIMEOUT_S):
                raise RuntimeError(f"engine process {name!r} did not start within {_START_TIMEOUT_S:.0f}s")
            status, detail = self._conn.recv()
            if status != "ready":
                raise RuntimeError(f"engine process {name!r} failed to start: {detail}")
        except BaseException:
            self._stop_process()
            raise

    @property
    def pid(self) -> int | None:
        """The engine process's id."""
        return self._process.pid

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Copy ``state_dict`` into the shared weights; the engine loads them before its next batch."""
        with self._weights_lock, torch.no_grad():
            for key, tensor in state_dict.items():
                self._shared[key].copy_(tensor.detach())
            self._shared_version.value = version
            self._version = version
        logger.debug("engine %s: policy_version=%d shared with its process", self.name, version)

    def _sample(self, prompts: list[tuple[list[int], int]]) -> list[Generation]:
        with self._pipe_lock:
            try:
                self._conn.send(("generate", prompts))
                status, payload = self._conn.recv()
            except (EOFError, OSError) as e:
                raise RuntimeError(
                    f"engine process {self.name!r} (pid {self.pid}) is gone (exit code {self._process.exitcode})"
                ) from e
        if status != "ok":
            raise RuntimeError(f"engine process {self.name!r} failed to sample: {payload}")
        generations, seconds = payload
        self.process_busy_s += seconds
        return generations

    async def aclose(self) -> None:
        """Stop batching and stop the engine process."""
        await super().aclose()
        self._stop_process()

    def _stop_process(self) -> None:
        if self._process.is_alive():
            try:
                with self._pipe_lock:
                    self._conn.send(("stop", None))
            except (OSError, ValueError):
                pass  # the pipe is already gone; terminate below
            self._process.join(10)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()


def _engine_main(
    conn: Any,
    config: Any,
    shared: dict[str, torch.Tensor],
    shared_version: Any,
    weights_lock: Any,
    settings: dict[str, Any],
) -> None:
    """The engine process: load the shared weights, then sample batches until told to stop."""
    try:
        if settings["cpus"] is not None:
            os.sched_setaffinity(0, settings["cpus"])
        torch.set_num_threads(settings["num_threads"])
        torch.manual_seed(settings["seed"])
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_config(config)
        if settings["generation_config"] is not None:
            model.generation_config = settings["generation_config"]
        model.eval()
        version = _load(model, shared, shared_version, weights_lock)
    except Exception as e:  # process boundary: tell the parent why, then exit
        conn.send(("error", repr(e)))
        return
    conn.send(("ready", None))
    while True:
        try:
            command, payload = conn.recv()
        except EOFError:
            return  # the parent is gone
        if command == "stop":
            return
        if shared_version.value != version:
            version = _load(model, shared, shared_version, weights_lock)
        started = time.perf_counter()
        # Partial rollouts: weights published mid-call stop it; the parent resumes the turn in a new call.
        interrupt = (lambda loaded=version: shared_version.value != loaded) if settings["partial_rollouts"] else None
        try:
            result = sample_batch(
                model,
                payload,
                eos_token_id=settings["eos_token_id"],
                pad_token_id=settings["pad_token_id"],
                temperature=settings["temperature"],
                version=version,
                engine=settings["engine"],
                interrupt=interrupt,
            )
        except Exception as e:  # engine boundary: fail this batch, keep serving
            conn.send(("error", repr(e)))
            continue
        conn.send(("ok", (result, time.perf_counter() - started)))


def _load(model: torch.nn.Module, shared: dict[str, torch.Tensor], shared_version: Any, weights_lock: Any) -> int:
    with weights_lock, torch.no_grad():
        model.load_state_dict(shared, strict=True)
        return int(shared_version.value)
