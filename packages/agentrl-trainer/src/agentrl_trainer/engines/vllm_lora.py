"""Policy and lagged engines as versioned LoRA adapters on one colocated vLLM engine (for LoRA-trained policies).

When the policy is trained with LoRA (peft), the base weights never change and a policy version is just an
adapter. So instead of one vLLM engine per lagged engine, :class:`LoRAVersions` keeps **one** vLLM engine
(``--enable-lora``) and loads each version's adapter once, as a ``LoRARequest`` with its own integer id; every
:class:`LoRAVersionEngine` (``policy``, ``lagged0``, ...) is a :class:`~agentrl_trainer.rollout.engine.RolloutEngine`
that sends its requests with the adapter of *its* version. The policy engine moves to a new adapter after every
optimizer step; a lagged engine stays on its old one until its refresh, when it moves to the adapter the policy
already loaded (nothing is loaded twice). An adapter is removed from vLLM when no engine and no request in flight
uses it any more, so at most ``1 + num_lagged_engines`` adapters (plus those still finishing requests) are loaded:
size ``--max-loras`` for that.

Weight updates take the trainer's state dict as usual; only its LoRA tensors (``...lora_A.<adapter>.weight``,
``...lora_B.<adapter>.weight``) are written, in peft's adapter layout (``adapter_model.safetensors`` and
``adapter_config.json``) under the engine's weights directory, and vLLM loads the directory with ``add_lora``.
An update costs the adapter's size, not the model's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import itertools
import json
import os
import re
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine
from agentrl_trainer.engines.vllm_server import VLLMServerConfig
from agentrl_trainer.types import Generation

if TYPE_CHECKING:
    import torch

__all__ = ["LoRAVersionEngine", "LoRAVersions", "adapter_tensors", "lora_rank_flag", "vllm_lora_engines"]

# peft's names: <module>.lora_A.<adapter>.weight in a PeftModel's state dict, <module>.lora_A.weight once saved.
_LORA_KEY = re.compile(r"^(?P<module>.+)\.(?P<ab>lora_[AB])(?:\.(?P<adapter>[^.]+))?\.weight$")
_PEFT_PREFIX = "base_model.model."


def adapter_tensors(state_dict: Mapping[str, torch.Tensor], adapter_name: str = "default") -> dict[str, torch.Tensor]:
    """The LoRA tensors of ``adapter_name`` in a peft model's state dict, named as in a saved peft adapter.

    Raises:
        ValueError: If the state dict holds no LoRA tensors for that adapter (the policy is not a peft model).
    """
    out: dict[str, torch.Tensor] = {}
    for key, tensor in state_dict.items():
        match = _LORA_KEY.match(key)
        if match is None or match["adapter"] not in (None, adapter_name):
            continue
        module = match["module"]
        if not module.startswith(_PEFT_PREFIX):
            module = _PEFT_PREFIX + module
        out[f"{module}.{match['ab']}.weight"] = tensor.detach().to("cpu").contiguous()
    if not out:
        raise ValueError(
            f"The state dict has no LoRA tensors (lora_A/lora_B) of adapter {adapter_name!r}: LoRA-versioned engines "
            "need a policy trained with a peft LoRA adapter."
        )
    return out


def lora_rank_flag(rank: int) -> int:
    """The smallest ``--max-lora-rank`` vLLM accepts that holds an adapter of rank ``rank``."""
    for allowed in (1, 8, 16, 32, 64, 128, 256, 320, 512):
        if rank <= allowed:
            return allowed
    raise ValueError(f"vLLM serves LoRA ranks up to 512, the adapter has rank {rank}.")


def vllm_lora_engines(
    model: Any,
    tokenizer: Any,
    staging_dir: Path,
    *,
    server: VLLMServerConfig,
    eos_token_id: int,
    temperature: float,
    version: int,
    num_lagged: int,
) -> tuple[LoRAVersionEngine, list[LoRAVersionEngine]]:
    """The policy and ``num_lagged`` lagged engines of a peft LoRA ``model``, as adapters on one colocated engine.

    The base model (the peft model without its adapter) is staged to ``staging_dir`` and loaded by one vLLM
    engine with LoRA on; every engine starts at ``version`` with the model's current adapter.
    """
    import copy

    from agentrl_trainer.engines.factory import stage_model

    adapter_name = getattr(model, "active_adapter", "default")
    adapter_config = model.peft_config[adapter_name]
    base = copy.deepcopy(model).unload()  # the frozen base weights, without the LoRA layers
    stage_model(base, tokenizer, staging_dir)
    del base
    flags = ["--enable-lora", "--max-lora-rank", str(lora_rank_flag(int(adapter_config.r)))]
    # One adapter per engine, plus room for one still finishing requests while the policy moves on.
    flags += ["--max-loras", str(num_lagged + 2)]
    config = replace(server, model=str(staging_dir), extra_args=[*server.extra_args, *flags])
    engine = VLLMColocateEngine(config, eos_token_id=eos_token_id, name="vllm-lora", temperature=temperature)
    pool = LoRAVersions(engine, adapter_config.to_dict(), adapter_name=adapter_name)
    state_dict = model.state_dict()
    policy = pool.engine_for("policy", state_dict, version)
    lagged = [pool.engine_for(f"lagged{i}", state_dict, version) for i in range(num_lagged)]
    return policy, lagged


def _json_default(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value)
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"adapter_config value {value!r} is not JSON-serialisable.")


@dataclass
class _Adapter:
    request: Any  # vllm.lora.request.LoRARequest
    path: Path
    refs: int


class LoRAVersions:
    """One colocated vLLM engine serving a policy's LoRA adapters by version (see the module docstring)."""

    def __init__(
        self, engine: VLLMColocateEngine, adapter_config: Mapping[str, Any], *, adapter_name: str = "default"
    ) -> None:
        """Serve adapters on ``engine``, which must have been started with ``--enable-lora``.

        Args:
            engine: The vLLM engine holding the frozen base model.
            adapter_config: The adapter's peft config as a dict (``peft_model.peft_config[name].to_dict()``).
            adapter_name: Which peft adapter of the state dicts to serve.
        """
        self.engine = engine
        self.adapter_config = json.loads(json.dumps(dict(adapter_config), default=_json_default))
        self.adapter_name = adapter_name
        self.directory = engine.weights_dir / f"agentrl-lora-{os.getpid()}-{id(self):x}"
        self._lock = threading.Lock()
        self._adapters: dict[int, _Adapter] = {}
        self._ids = itertools.count(1)  # vLLM wants ids >= 1; never reused, so a removed id is never ambiguous
        self._open_engines = 0
        self._removals: set[concurrent.futures.Future[Any]] = set()

    def engine_for(self, name: str, state_dict: Mapping[str, torch.Tensor], version: int) -> LoRAVersionEngine:
        """A rollout engine named ``name`` starting at ``version`` (its adapter taken from ``state_dict``).

        When every engine made here is closed, the vLLM engine is shut down too.
        """
        engine = LoRAVersionEngine(self, name, state_dict, version)
        with self._lock:
            self._open_engines += 1
        return engine

    def _engine_closed(self) -> None:
        with self._lock:
            self._open_engines -= 1
            last = self._open_engines == 0
        if last:
            self.close()

    @property
    def loaded_versions(self) -> list[int]:
        """Versions whose adapters are loaded (held by an engine or by a request in flight)."""
        with self._lock:
            return sorted(self._adapters)

    def acquire(self, version: int, state_dict: Mapping[str, torch.Tensor] | None = None) -> Any:
        """Take a reference on ``version``'s adapter, loading it from ``state_dict`` if it is not loaded yet.

        Raises:
            KeyError: If the version is not loaded and no state dict is given.
            RuntimeError: If vLLM refused the adapter.
        """
        with self._lock:
            adapter = self._adapters.get(version)
            if adapter is not None:
                adapter.refs += 1
                return adapter.request
            if state_dict is None:
                raise KeyError(f"LoRA adapter of version {version} is not loaded.")
            adapter = self._load(version, state_dict)
            self._adapters[version] = adapter
            return adapter.request

    def _load(self, version: int, state_dict: Mapping[str, torch.Tensor]) -> _Adapter:
        from safetensors.torch import save_file
        from vllm.lora.request import LoRARequest

        lora_id = next(self._ids)
        path = self.directory / f"v{version}-id{lora_id}"
        path.mkdir(parents=True, exist_ok=True)
        save_file(adapter_tensors(state_dict, self.adapter_name), str(path / "adapter_model.safetensors"))
        (path / "adapter_config.json").write_text(json.dumps(self.adapter_config))
        request = LoRARequest(f"v{version}", lora_id, str(path))
        try:
            self.engine.call("add_lora", request)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        return _Adapter(request=request, path=path, refs=1)

    def release(self, version: int) -> None:
        """Drop a reference on ``version``'s adapter; the last one removes it from vLLM (without waiting)."""
        with self._lock:
            adapter = self._adapters[version]
            adapter.refs -= 1
            if adapter.refs > 0:
                return
            del self._adapters[version]
        if self.engine.closed:
            shutil.rmtree(adapter.path, ignore_errors=True)
            return
        # Not waited for: release runs on the rollout loop after each request, and must not block it.
        future = self.engine.submit("remove_lora", adapter.request.lora_int_id)
        with self._lock:
            self._removals.add(future)

        def removed(done: concurrent.futures.Future[Any]) -> None:
            shutil.rmtree(adapter.path, ignore_errors=True)
            with self._lock:
                self._removals.discard(done)

        future.add_done_callback(removed)

    def wait_for_removals(self, timeout_s: float = 60.0) -> None:
        """Wait until vLLM has removed the adapters released so far."""
        with self._lock:
            removals = list(self._removals)
        concurrent.futures.wait(removals, timeout=timeout_s)

    def close(self) -> None:
        """Shut the vLLM engine down (after the adapter removals under way) and delete the adapter files."""
        self.wait_for_removals()
        self.engine.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class LoRAVersionEngine:
    """A rollout engine that samples with one version's adapter on a shared vLLM engine (module docstring)."""

    def __init__(self, pool: LoRAVersions, name: str, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Start at ``version``, with the adapter in ``state_dict`` (reused if that version is already loaded)."""
        self.pool = pool
        self.name = name
        self._lock = threading.Lock()
        pool.acquire(version, state_dict)  # this engine's reference, dropped when it moves on
        self._version = version
        self._released = False
        self.requests = 0
        self.generated_tokens = 0

    @property
    def version(self) -> int:
        """Policy version of the adapter this engine samples with."""
        return self._version

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        """Sample with this engine's current adapter; the adapter stays loaded until the request ends."""
        with self._lock:
            version = self._version
            request = self.pool.acquire(version)
        try:
            generation = await self.pool.engine.generate_as(
                prompt_ids, max_new_tokens=max_new_tokens, name=self.name, version=version, lora_request=request
            )
        finally:
            self.pool.release(version)
        self.requests += 1
        self.generated_tokens += len(generation.token_ids)
        return generation

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Move to ``version``'s adapter (loading it once for all engines); requests in flight keep theirs."""
        with self._lock:
            if version == self._version:
                return
            if self._released or self.pool.engine.closed:  # the rollout loop has shut down: nothing samples now
                self._version = version
                return
            self.pool.acquire(version, state_dict)
            old, self._version = self._version, version
        self.pool.release(old)

    async def aclose(self) -> None:
        """Release this engine's adapter; the vLLM engine itself is closed by :meth:`LoRAVersions.close`."""
        with self._lock:
            if self._released:
                return
            self._released = True
        await asyncio.to_thread(self.pool.release, self._version)
        await asyncio.to_thread(self.pool._engine_closed)
