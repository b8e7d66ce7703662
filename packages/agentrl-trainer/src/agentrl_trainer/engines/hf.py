"""The ``hf`` rollout engine: transformers ``generate`` on a private copy of the policy, batched across episodes.

Episodes call :meth:`HFEngine.agenerate` concurrently; requests that arrive together are left-padded into one
``generate`` call, run in a worker thread so the event loop (and the environments) keep going. The engine
owns its own copy of the weights, so training can run beside generation; ``update_weights`` swaps them
between two batches under a lock (or, with partial rollouts, between two chunks of a batch: see
:func:`sample_in_chunks`). Log-probs are computed from the raw logits at the sampling temperature,
the same quantity TRL's loss computes for the trainer model, so the importance ratio compares like with like.

:class:`BatchingEngine` is the batching part alone; the ``hf_process`` engine
(:mod:`agentrl_trainer.engines.hf_process`) shares it and :func:`sample_batch` with :class:`HFEngine`.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from transformers import StoppingCriteria, StoppingCriteriaList

from agentrl_trainer.types import Generation

__all__ = ["BatchingEngine", "HFEngine", "sample_batch", "sample_in_chunks"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Request:
    prompt_ids: list[int]
    max_new_tokens: int
    future: asyncio.Future[Generation]


class BatchingEngine:
    """Batches concurrent :meth:`agenerate` calls into one :meth:`_run_batch` call, run in a worker thread.

    Subclasses say how a batch is sampled (in process, or in an engine process) and hold ``version``.
    """

    def __init__(self, *, name: str, max_batch_size: int, version: int, chunk_tokens: int = 0) -> None:
        """Set up the request queue (the worker starts on the first request).

        Args:
            name: Engine name recorded on every turn it samples.
            max_batch_size: Most requests per batch.
            version: Policy version of the initial weights.
            chunk_tokens: Partial rollouts: sample a batch at most this many tokens at a time, and stop a
                ``generate`` call early once a weight update is waiting, so that the update waits for one token,
                not a whole turn, and the rest of the turn is sampled with the new weights (0: off, a turn in one
                go, the default).
        """
        if chunk_tokens < 0:
            raise ValueError(f"chunk_tokens must be >= 0 (0: no partial rollouts), got {chunk_tokens}.")
        self.name = name
        self.max_batch_size = max_batch_size
        self.chunk_tokens = chunk_tokens
        self._version = version
        self._updates_waiting = 0
        """Weight updates waiting for the current chunk; the chunk loop lets them in before its next chunk."""
        self._queue: asyncio.Queue[_Request] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.generated_tokens = 0
        self.requests = 0
        self.batches = 0
        self.busy_s = 0.0
        """Seconds spent sampling batches (whether generation keeps up shows in busy_s / wall time)."""
        self.resumed_turns = 0
        """Partial rollouts: turns whose tokens came from more than one policy version."""

    @property
    def version(self) -> int:
        """Policy version of the loaded weights."""
        return self._version

    def _sample(self, prompts: list[tuple[list[int], int]]) -> list[Generation]:
        """Sample ``(prompt_ids, max_new_tokens)`` requests with the weights loaded now; runs in a worker thread."""
        raise NotImplementedError

    def _run_batch(self, prompts: list[tuple[list[int], int]]) -> list[Generation]:
        """Sample a batch: in one go, or with ``chunk_tokens`` in chunks (:func:`sample_in_chunks`)."""
        if not self.chunk_tokens:
            return self._sample(prompts)
        generations = sample_in_chunks(self._sample, prompts, self.chunk_tokens, before_chunk=self._yield_to_updates)
        self.resumed_turns += sum(bool(g.token_versions) for g in generations)
        return generations

    def _update_waiting(self) -> bool:
        """Whether a weight update waits for the current ``generate`` call (partial rollouts interrupt it)."""
        return self._updates_waiting > 0

    def _yield_to_updates(self) -> None:
        """Between two chunks: let a waiting weight update load (a lock alone would let the sampler win again)."""
        while self._updates_waiting:
            time.sleep(0.001)

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        """Sample one continuation; concurrent calls are batched."""
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}.")
        loop = asyncio.get_running_loop()
        if self._queue is None or self._loop is not loop:
            # First request, or a new event loop (the previous loop's worker died with it).
            self._loop = loop
            self._queue = asyncio.Queue()
            self._worker = asyncio.create_task(self._serve(), name=f"hf-engine-{self.name}")
        future: asyncio.Future[Generation] = loop.create_future()
        await self._queue.put(_Request(list(prompt_ids), max_new_tokens, future))
        return await future

    async def aclose(self) -> None:
        """Stop the batching worker; pending requests are cancelled."""
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
            self._worker = None
        while self._queue is not None and not self._queue.empty():
            self._queue.get_nowait().future.cancel()
        self._queue = None

    async def _serve(self) -> None:
        assert self._queue is not None
        while True:
            batch = [await self._queue.get()]
            await asyncio.sleep(0)  # let episodes that are ready submit too, so they share the batch
            while not self._queue.empty() and len(batch) < self.max_batch_size:
                batch.append(self._queue.get_nowait())
            batch = [r for r in batch if not r.future.cancelled()]
            if not batch:
                continue
            started = time.perf_counter()
            try:
                results = await asyncio.to_thread(self._run_batch, [(r.prompt_ids, r.max_new_tokens) for r in batch])
            except Exception as e:  # engine boundary: fail the waiting episodes, keep serving
                logger.exception("engine %s: generation failed", self.name)
                for r in batch:
                    if not r.future.done():
                        r.future.set_exception(e)
                continue
            finally:
                self.busy_s += time.perf_counter() - started
            self.batches += 1
            self.requests += len(batch)
            for r, result in zip(batch, results, strict=True):
                self.generated_tokens += len(result.token_ids)
                if not r.future.done():
                    r.future.set_result(result)


class HFEngine(BatchingEngine):
    """Rollout engine over a transformers causal LM (see the module docstring)."""

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
        copy_model: bool = True,
        chunk_tokens: int = 0,
    ) -> None:
        """Wrap ``model`` (copied unless ``copy_model`` is false) as an engine.

        Args:
            model: A causal LM; the engine keeps its own copy in eval mode.
            eos_token_id: End-of-turn token; a turn stops when it is sampled.
            pad_token_id: Padding token for batched prompts.
            name: Engine name recorded on every turn it samples.
            temperature: Sampling temperature (no top-k/top-p, so log-probs are the sampling distribution's).
            max_batch_size: Most requests per ``generate`` call.
            version: Policy version of the initial weights.
            copy_model: Copy the model (the default); pass false when the caller hands over a private copy.
            chunk_tokens: Partial rollouts (see :class:`BatchingEngine`); 0: off.
        """
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0 for sampling, got {temperature}.")
        super().__init__(name=name, max_batch_size=max_batch_size, version=version, chunk_tokens=chunk_tokens)
        self.model = copy.deepcopy(model) if copy_model else model
        self.model.eval()
        self.eos_token_id = eos_token_id
        self.pad_token_id = pad_token_id
        self.temperature = temperature
        self._lock = threading.Lock()

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Copy ``state_dict`` into the engine's model between two generation batches (or chunks)."""
        self._updates_waiting += 1
        try:
            with self._lock, torch.no_grad():
                self.model.load_state_dict(state_dict, strict=True)
                self._version = version
        finally:
            self._updates_waiting -= 1
        logger.debug("engine %s now at policy_version=%d", self.name, version)

    def _sample(self, prompts: list[tuple[list[int], int]]) -> list[Generation]:
        with self._lock:
            return sample_batch(
                self.model,
                prompts,
                eos_token_id=self.eos_token_id,
                pad_token_id=self.pad_token_id,
                temperature=self.temperature,
                version=self._version,
                engine=self.name,
                interrupt=self._update_waiting if self.chunk_tokens else None,
            )


def sample_in_chunks(
    sample: Callable[[list[tuple[list[int], int]]], list[Generation]],
    prompts: list[tuple[list[int], int]],
    chunk_tokens: int,
    *,
    before_chunk: Callable[[], None] = lambda: None,
) -> list[Generation]:
    """Partial rollouts: sample ``prompts`` ``chunk_tokens`` tokens at a time with whatever weights are loaded.

    Each chunk continues every unfinished request from its prompt plus the tokens sampled so far (re-prefilled,
    so a chunk after a weight update reads the prefix with the new weights), until the request samples its
    end-of-turn token or reaches its own limit. The pieces are joined into one generation per request whose
    ``token_versions`` says which version sampled each token (left empty when one version sampled them all)
    and whose ``version`` is the oldest of them.

    Args:
        sample: Samples ``(prompt_ids, max_new_tokens)`` requests with the weights loaded at the call.
        prompts: The batch's requests.
        chunk_tokens: Tokens per chunk (>= 1).
        before_chunk: Called before each chunk (the engine lets waiting weight updates in there).
    """
    tokens: list[list[int]] = [[] for _ in prompts]
    logprobs: list[list[float]] = [[] for _ in prompts]
    versions: list[list[int]] = [[] for _ in prompts]
    finish = ["length"] * len(prompts)
    pending = list(range(len(prompts)))
    engine = ""
    while pending:
        before_chunk()
        requests = [(prompts[i][0] + tokens[i], min(chunk_tokens, prompts[i][1] - len(tokens[i]))) for i in pending]
        still: list[int] = []
        for i, piece in zip(pending, sample(requests), strict=True):
            engine = piece.engine
            tokens[i].extend(piece.token_ids)
            logprobs[i].extend(piece.logprobs)
            versions[i].extend(piece.versions_per_token)
            if piece.finish_reason == "stop":
                finish[i] = "stop"
            elif len(tokens[i]) < prompts[i][1]:
                still.append(i)
        pending = still
    return [
        Generation(
            token_ids=tuple(tokens[i]),
            logprobs=tuple(logprobs[i]),
            version=min(versions[i]),
            engine=engine,
            finish_reason=finish[i],
            token_versions=tuple(versions[i]) if len(set(versions[i])) > 1 else (),
        )
        for i in range(len(prompts))
    ]


def sample_batch(
    model: torch.nn.Module,
    prompts: list[tuple[list[int], int]],
    *,
    eos_token_id: int,
    pad_token_id: int,
    temperature: float,
    version: int,
    engine: str,
    interrupt: Callable[[], bool] | None = None,
) -> list[Generation]:
    """Sample every ``(prompt_ids, max_new_tokens)`` in one left-padded ``generate`` call.

    Each continuation stops at its first end-of-turn token or its own token limit; its log-probs are taken
    from the raw logits at ``temperature`` (what TRL's loss computes for the trainer model). ``interrupt``
    (partial rollouts) is asked after every token; once it says yes, the call returns what it has sampled so
    far (at least one token per unfinished continuation), finished ``length`` below its limit.
    """
    width = max(len(ids) for ids, _ in prompts)
    input_ids = torch.full((len(prompts), width), pad_token_id, dtype=torch.long)
    attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for row, (ids, _) in enumerate(prompts):
        input_ids[row, width - len(ids) :] = torch.tensor(ids)
        attention_mask[row, width - len(ids) :] = 1
    with torch.no_grad():
        out = model.generate(  # pyright: ignore[reportCallIssue]  # nn.Module's __getattr__ hides generate's type
            input_ids=input_ids,
            attention_mask=attention_mask,
            do_sample=True,
            temperature=temperature,
            top_k=0,
            top_p=1.0,
            max_new_tokens=max(limit for _, limit in prompts),
            eos_token_id=eos_token_id,
            pad_token_id=pad_token_id,
            output_logits=True,
            return_dict_in_generate=True,
            use_cache=True,  # explicit: a training model's config says use_cache=False under gradient checkpointing
            **({"stopping_criteria": StoppingCriteriaList([_Interrupt(interrupt)])} if interrupt else {}),
        )
    new_ids = out.sequences[:, width:]
    logits = torch.stack(out.logits, dim=1).float() / temperature
    logprobs = torch.log_softmax(logits, dim=-1).gather(-1, new_ids.unsqueeze(-1)).squeeze(-1)
    return [
        _cut(new_ids[row], logprobs[row], limit, eos_token_id, version, engine)
        for row, (_, limit) in enumerate(prompts)
    ]


class _Interrupt(StoppingCriteria):
    """Stops every row of a ``generate`` call once ``interrupt()`` is true (a weight update is waiting)."""

    def __init__(self, interrupt: Callable[[], bool]) -> None:
        self.interrupt = interrupt

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: object) -> torch.BoolTensor:
        return torch.full((input_ids.shape[0],), self.interrupt(), dtype=torch.bool, device=input_ids.device)  # pyright: ignore[reportReturnType]  # a BoolTensor at run time


def _cut(ids: torch.Tensor, logprobs: torch.Tensor, limit: int, eos: int, version: int, engine: str) -> Generation:
    tokens = ids[:limit].tolist()
    finish = "length"
    if eos in tokens:
        tokens = tokens[: tokens.index(eos) + 1]
        finish = "stop"
    return Generation(
        token_ids=tuple(tokens),
        logprobs=tuple(logprobs[: len(tokens)].tolist()),
        version=version,
        engine=engine,
        finish_reason=finish,
    )
