"""Policy and lagged engines as versioned LoRA adapters on shared vLLM engines (for LoRA-trained policies).

When the policy is trained with LoRA (peft), the base weights never change and a policy version is just an
adapter. So instead of one vLLM engine per lagged engine, :class:`LoRAVersions` keeps **one** vLLM engine (its
*host*, started with ``--enable-lora``) and loads each version's adapter once, under a name and integer id of its
own; every :class:`LoRAVersionEngine` (``policy``, ``lagged0``, ...) is a
:class:`~agentrl_trainer.engines.protocol.RolloutEngine` that sends its requests with the adapter of *its* version.
The policy engine moves to a new adapter after every optimizer step; a lagged engine stays on its old one until
its refresh, when it moves to the adapter the policy already loaded (nothing is loaded twice). An adapter is
removed from vLLM when no engine and no request in flight uses it any more, so at most ``1 + num_lagged_engines``
adapters (plus those still finishing requests) are loaded: size ``--max-loras`` for that.

The host is either mode's engine, behind the small :class:`LoRAHost` interface:

- colocate mode: a :class:`~agentrl_trainer.engines.vllm_colocate.VLLMColocateEngine` (``AsyncLLM.add_lora`` with
  a ``LoRARequest``, requests carry the ``LoRARequest``);
- server mode: a :class:`~agentrl_trainer.engines.vllm_engine.VLLMServerEngine` (``POST /v1/load_lora_adapter``
  and ``/v1/unload_lora_adapter`` with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``; requests name the adapter in
  their ``model`` field).

With several replicas (:func:`vllm_lora_engines` with ``replicas > 1`` or several server URLs) every replica has
its own :class:`LoRAVersions`, and each engine name is an :class:`~agentrl_trainer.engines.router.EngineRouter`
over that name's engines on every replica: the router pushes a version to all live replicas before it reports
the new version, marks a replica that fails the load dead (counted), and retries that replica's episodes
elsewhere, exactly as for full-weight replicas.

Weight updates take the trainer's state dict as usual; only its LoRA tensors (``...lora_A.<adapter>.weight``,
``...lora_B.<adapter>.weight``) are written, in peft's adapter layout (``adapter_model.safetensors`` and
``adapter_config.json``) under the host's weights directory (which a server must see: same host or a shared
mount), and the host loads the directory. An update costs the adapter's size, not the model's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import itertools
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agentrl_trainer.engines.protocol import RolloutEngine
from agentrl_trainer.types import Generation

if TYPE_CHECKING:
    import torch

    from agentrl_trainer.engines.spec import EngineSpec

__all__ = [
    "LoRAHost",
    "LoRAVersionEngine",
    "LoRAVersions",
    "adapter_tensors",
    "lora_flags",
    "lora_rank_flag",
    "vllm_lora_engines",
]

logger = logging.getLogger(__name__)

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


def lora_flags(rank: int, num_engines: int) -> list[str]:
    """The vLLM flags of a host for ``num_engines`` LoRA-versioned engines of rank ``rank``."""
    # One adapter per engine, plus room for one still finishing requests while the policy moves on.
    return ["--enable-lora", "--max-lora-rank", str(lora_rank_flag(rank)), "--max-loras", str(num_engines + 1)]


def vllm_lora_engines(
    model: Any, tokenizer: Any, staging_dir: Path, spec: EngineSpec
) -> tuple[RolloutEngine, list[RolloutEngine]]:
    """The policy and ``spec.num_lagged`` lagged engines of a peft LoRA ``model``, as adapters on shared vLLM engines.

    The base model (the peft model without its adapter) is staged to ``staging_dir`` and loaded by
    ``spec.replicas`` vLLM engines with LoRA on (servers, or colocated engines with ``spec.mode="colocate"``);
    with ``spec.server_urls`` the servers someone else started are used instead, and they must serve the same base
    model with the flags of :func:`lora_flags` and ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=True``. Every engine starts
    at ``spec.version`` with the model's current adapter; with several replicas each engine is a router over them.

    Raises:
        RuntimeError: If a vLLM engine does not start or refuses the first adapter; what was started is stopped.
    """
    import copy

    from agentrl_trainer.engines.replicas import one_engine, stage_model, vllm_replicas

    adapter_name = getattr(model, "active_adapter", "default")
    adapter_config = model.peft_config[adapter_name]
    if not spec.server_urls:
        base = copy.deepcopy(model).unload()  # the frozen base weights, without the LoRA layers
        stage_model(base, tokenizer, staging_dir)
        del base
    flags = lora_flags(int(adapter_config.r), 1 + spec.num_lagged)
    hosts = vllm_replicas(
        "vllm-lora", spec.with_server(model=str(staging_dir), extra_args=[*spec.server.extra_args, *flags])
    )
    pools = [LoRAVersions(host, adapter_config.to_dict(), adapter_name=adapter_name) for host in hosts]
    state_dict = model.state_dict()
    try:
        policy, *lagged = (
            one_engine([pool.engine_for(name, state_dict, spec.version) for pool in pools], name)
            for name in ["policy", *spec.lagged_names()]
        )
    except BaseException:
        for pool in pools:
            pool.close()
        raise
    return policy, lagged


class LoRAHost(Protocol):
    """A vLLM engine that serves adapters: ``VLLMColocateEngine`` or ``VLLMServerEngine`` (module docstring)."""

    name: str
    weights_dir: Path

    def add_lora(self, name: str, lora_id: int, path: Path) -> Any:
        """Load the peft adapter directory ``path``; returns the handle requests and :meth:`remove_lora` take."""
        ...

    def remove_lora(self, handle: Any) -> None:
        """Unload an adapter :meth:`add_lora` loaded."""
        ...

    async def generate_as(
        self, prompt_ids: list[int], *, max_new_tokens: int, name: str, version: int, lora: Any = None
    ) -> Generation:
        """Sample with adapter ``lora``, the generation tagged with engine ``name`` and ``version``."""
        ...

    async def aclose(self) -> None:
        """Shut the engine down (a server this process started is stopped)."""
        ...


def _json_default(value: Any) -> Any:
    if isinstance(value, set | frozenset):
        return sorted(value)
    if isinstance(value, enum.Enum):
        return value.value
    raise TypeError(f"adapter_config value {value!r} is not JSON-serialisable.")


@dataclass
class _Adapter:
    handle: Any  # what the host's add_lora returned: a LoRARequest (colocate) or the adapter's name (server)
    path: Path
    refs: int


class LoRAVersions:
    """One vLLM engine serving a policy's LoRA adapters by version (see the module docstring)."""

    def __init__(self, host: LoRAHost, adapter_config: Mapping[str, Any], *, adapter_name: str = "default") -> None:
        """Serve adapters on ``host``, which must have been started with LoRA on (:func:`lora_flags`).

        Args:
            host: The vLLM engine holding the frozen base model (colocated, or a server's engine).
            adapter_config: The adapter's peft config as a dict (``peft_model.peft_config[name].to_dict()``).
            adapter_name: Which peft adapter of the state dicts to serve.
        """
        self.host = host
        self.adapter_config = json.loads(json.dumps(dict(adapter_config), default=_json_default))
        self.adapter_name = adapter_name
        self.directory = host.weights_dir / f"agentrl-lora-{os.getpid()}-{id(self):x}"
        self._lock = threading.Lock()  # the adapter table; held briefly (the rollout loop takes it per request)
        self._load_lock = threading.Lock()  # one load at a time, outside _lock: a server load is an HTTP call
        self._adapters: dict[int, _Adapter] = {}
        self._ids = itertools.count(1)  # vLLM wants ids >= 1; never reused, so a removed id is never ambiguous
        self._open_engines = 0
        self._closed = False
        # Removals run here, not on the caller's thread: release runs on the rollout loop after each request.
        self._remover = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="lora-remove")
        self._removals: set[concurrent.futures.Future[Any]] = set()

    @property
    def closed(self) -> bool:
        """Whether the pool (and its host) has been shut down."""
        return self._closed

    def engine_for(self, name: str, state_dict: Mapping[str, torch.Tensor], version: int) -> LoRAVersionEngine:
        """A rollout engine named ``name`` starting at ``version`` (its adapter taken from ``state_dict``).

        When every engine made here is closed, the host is shut down too.

        Raises:
            RuntimeError: If the host refused the adapter.
        """
        engine = LoRAVersionEngine(self, name, state_dict, version)
        with self._lock:
            self._open_engines += 1
        return engine

    async def _engine_closed(self) -> None:
        with self._lock:
            self._open_engines -= 1
            last = self._open_engines == 0
        if last:
            await self.aclose()

    @property
    def loaded_versions(self) -> list[int]:
        """Versions whose adapters are loaded (held by an engine or by a request in flight)."""
        with self._lock:
            return sorted(self._adapters)

    def _take(self, version: int) -> Any | None:
        with self._lock:
            adapter = self._adapters.get(version)
            if adapter is None:
                return None
            adapter.refs += 1
            return adapter.handle

    def acquire(self, version: int, state_dict: Mapping[str, torch.Tensor] | None = None) -> Any:
        """Take a reference on ``version``'s adapter, loading it from ``state_dict`` if it is not loaded yet.

        Raises:
            KeyError: If the version is not loaded and no state dict is given.
            RuntimeError: If the host refused the adapter.
        """
        handle = self._take(version)
        if handle is not None:
            return handle
        if state_dict is None:
            raise KeyError(f"LoRA adapter of version {version} is not loaded.")
        with self._load_lock:
            handle = self._take(version)  # loaded by another thread meanwhile
            if handle is not None:
                return handle
            adapter = self._load(version, state_dict)
            with self._lock:
                self._adapters[version] = adapter
            return adapter.handle

    def _load(self, version: int, state_dict: Mapping[str, torch.Tensor]) -> _Adapter:
        from safetensors.torch import save_file

        lora_id = next(self._ids)
        path = self.directory / f"v{version}-id{lora_id}"
        path.mkdir(parents=True, exist_ok=True)
        save_file(adapter_tensors(state_dict, self.adapter_name), str(path / "adapter_model.safetensors"))
        (path / "adapter_config.json").write_text(json.dumps(self.adapter_config))
        # Unique across trainers sharing a server (vllm_server_urls): the directory name has the pid and pool id.
        name = f"{self.directory.name}-v{version}-id{lora_id}"
        try:
            handle = self.host.add_lora(name, lora_id, path)
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        return _Adapter(handle=handle, path=path, refs=1)

    def release(self, version: int) -> None:
        """Drop a reference on ``version``'s adapter; the last one removes it from vLLM (without waiting)."""
        with self._lock:
            adapter = self._adapters[version]
            adapter.refs -= 1
            if adapter.refs > 0:
                return
            del self._adapters[version]
            if self._closed:
                shutil.rmtree(adapter.path, ignore_errors=True)
                return
            future = self._remover.submit(self._remove, version, adapter)
            self._removals.add(future)
        future.add_done_callback(self._removed)

    def _remove(self, version: int, adapter: _Adapter) -> None:
        # The files go only after vLLM let go of the adapter, and before the future completes, so that
        # wait_for_removals means both are done (a done callback may run after waiters wake up).
        try:
            self.host.remove_lora(adapter.handle)
        except Exception as e:  # e.g. a dead server: its adapters went with it
            logger.warning("removing LoRA adapter v%d from %s failed: %s", version, self.host.name, e)
        finally:
            shutil.rmtree(adapter.path, ignore_errors=True)

    def _removed(self, future: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._removals.discard(future)

    def wait_for_removals(self, timeout_s: float = 60.0) -> None:
        """Wait until vLLM has removed the adapters released so far."""
        with self._lock:
            removals = list(self._removals)
        concurrent.futures.wait(removals, timeout=timeout_s)

    async def aclose(self) -> None:
        """Shut the host down (after the adapter removals under way) and delete the adapter files."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        await asyncio.to_thread(self.wait_for_removals)
        self._remover.shutdown(wait=False)
        try:
            await self.host.aclose()
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def close(self) -> None:
        """:meth:`aclose` for callers without an event loop (e.g. after a failed start)."""
        asyncio.run(self.aclose())


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
            handle = self.pool.acquire(version)
        try:
            generation = await self.pool.host.generate_as(
                prompt_ids, max_new_tokens=max_new_tokens, name=self.name, version=version, lora=handle
            )
        finally:
            self.pool.release(version)
        self.requests += 1
        self.generated_tokens += len(generation.token_ids)
        return generation

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Move to ``version``'s adapter (loading it once for all engines); requests in flight keep theirs.

        Raises:
            RuntimeError: If the host refused the adapter; the engine keeps its old version.
        """
        with self._lock:
            if version == self._version:
                return
            if self._released or self.pool.closed:  # the rollout loop has shut down: nothing samples now
                self._version = version
                return
        # Not under self._lock: a load can take a server round trip, and agenerate takes the lock per request.
        self.pool.acquire(version, state_dict)
        with self._lock:
            old, self._version = self._version, version
            if self._released:  # closed meanwhile: aclose released the old adapter, so drop the new one
                old = version
        self.pool.release(old)

    async def aclose(self) -> None:
        """Release this engine's adapter; the last engine of a pool shuts the pool's host down."""
        with self._lock:
            if self._released:
                return
            self._released = True
            version = self._version
        await asyncio.to_thread(self.pool.release, version)
        await self.pool._engine_closed()
