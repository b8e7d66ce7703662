"""Build a run's rollout engines, and the cross-policy sampler over them, from one :class:`EngineSpec`.

``spec.backend`` (the config's ``rollout_engine``) picks the engines; the policy engine and
``spec.num_lagged`` lagged engines are built alike:

* ``hf``: :class:`~agentrl_trainer.engines.hf.HFEngine`, a copy of the model in the trainer's process;
* ``hf_process``: :class:`~agentrl_trainer.engines.hf_process.ProcessEngine`, the same sampling in an engine
  process of its own;
* ``vllm``: the weights are staged under ``output_dir`` and loaded by vLLM servers or colocated engines
  (:mod:`agentrl_trainer.engines.replicas`); a LoRA (peft) policy becomes versioned adapters on shared engines
  (:mod:`agentrl_trainer.engines.vllm_lora`); several training processes in server mode share one set of
  servers (:mod:`agentrl_trainer.engines.shared_servers`), which the trainer must release at the end.

The trainer calls :func:`engine_model` and :func:`build_sampler`; nothing else chooses an engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from accelerate.utils import is_peft_model

from agentrl_trainer.distributed import engine_weights, holds_sharded_weights, whole_model
from agentrl_trainer.engines.spec import EngineBackend, EngineSpec
from agentrl_trainer.rollout.cross_policy import EngineSampler

if TYPE_CHECKING:
    from accelerate import Accelerator

    from agentrl_trainer.engines.protocol import RolloutEngine
    from agentrl_trainer.engines.shared_servers import SharedServers
    from agentrl_trainer.engines.vllm_server import VLLMServerConfig

__all__ = ["RolloutEngines", "build_sampler", "engine_model", "hf_engine"]


@dataclass
class RolloutEngines:
    """The sampler over a run's policy and lagged engines, and the servers they share when there are several."""

    sampler: EngineSampler
    shared_servers: SharedServers | None = None
    """Several processes, vLLM server mode: the run's one set of servers (the main process loads them)."""


def engine_model(
    accelerator: Accelerator, model: torch.nn.Module, model_wrapped: torch.nn.Module, backend: EngineBackend
) -> torch.nn.Module:
    """The model the engines copy: the trainer's own, or a whole copy when the processes hold shards of it.

    Raises:
        NotImplementedError: For a LoRA policy whose weights are sharded (FSDP, ZeRO-3).
    """
    unwrapped = accelerator.unwrap_model(model)
    if not holds_sharded_weights(accelerator):
        return unwrapped
    if is_peft_model(unwrapped):
        raise NotImplementedError(
            "A LoRA policy (peft_config) with FSDP or DeepSpeed ZeRO-3 is not supported: the engines would need "
            "the gathered adapter. Train LoRA with DDP (accelerate launch --multi_gpu)."
        )
    weights = engine_weights(accelerator, model_wrapped)
    # Only the hf engine samples with this model on the trainer's device; vLLM engines stage it to disk and
    # hf_process copies it to shared CPU memory, so they keep it off the (sharded, hence tight) device.
    device = accelerator.device if backend == "hf" else torch.device("cpu")
    return whole_model(unwrapped.config, weights).to(device)


def build_sampler(spec: EngineSpec, model: torch.nn.Module, tokenizer: Any) -> RolloutEngines:
    """The policy and lagged engines ``spec`` describes, loaded with ``model``'s weights, behind a sampler.

    Raises:
        NotImplementedError: For a LoRA policy with vLLM under several training processes.
        RuntimeError: If a vLLM engine does not start (those already started are stopped).
    """
    if spec.backend != "vllm":
        policy, *lagged = (hf_engine(name, spec, model) for name in ["policy", *spec.lagged_names()])
        return _with_sampler(spec, policy, lagged)
    spec = spec.with_server(dtype=_dtype(model))
    if is_peft_model(model):
        return _vllm_lora(spec, model, tokenizer)
    if spec.num_processes > 1 and spec.mode == "server":
        return _shared_vllm(spec, model, tokenizer)
    return _vllm(spec, model, tokenizer)


def hf_engine(name: str, spec: EngineSpec, model: torch.nn.Module) -> RolloutEngine:
    """An ``hf`` engine, or with ``spec.backend == "hf_process"`` an engine process, named ``name``."""
    common: dict[str, Any] = {
        "eos_token_id": spec.eos_token_id,
        "pad_token_id": spec.pad_token_id,
        "name": name,
        "temperature": spec.temperature,
        "max_batch_size": spec.max_batch_size,
        "version": spec.version,
        "chunk_tokens": spec.chunk_tokens,
    }
    if spec.backend == "hf_process":
        from agentrl_trainer.engines.hf_process import ProcessEngine

        # Distinct sampling streams per engine, process and resume point.
        seed = spec.seed + spec.version + 7919 * len(name) + 1_000_003 * spec.process_index
        return ProcessEngine(model, **common, num_threads=spec.num_threads, cpus=spec.cpus, seed=seed)
    from agentrl_trainer.engines.hf import HFEngine

    return HFEngine(model, **common)


def _with_sampler(
    spec: EngineSpec, policy: RolloutEngine, lagged: list[RolloutEngine], shared: SharedServers | None = None
) -> RolloutEngines:
    sampler = EngineSampler(
        policy,
        lagged,
        lagged_fraction=spec.lagged_fraction,
        lagged_refresh_steps=spec.lagged_refresh_steps,
        seed=spec.seed,
    )
    return RolloutEngines(sampler, shared)


def _vllm(spec: EngineSpec, model: torch.nn.Module, tokenizer: Any) -> RolloutEngines:
    """The policy's vLLM replicas (servers or colocated engines) and one per lagged engine, loaded with ``model``."""
    from agentrl_trainer.engines.replicas import stage_model, vllm_engine

    # Colocated engines belong to their process: each stages the model in a folder of its own.
    folder = f"vllm-model-rank{spec.process_index}" if spec.num_processes > 1 else "vllm-model"
    staged = spec.with_server(model=str(stage_model(model, tokenizer, Path(spec.output_dir) / folder)))
    policy = vllm_engine("policy", staged)
    return _with_sampler(spec, policy, [vllm_engine(name, staged.single()) for name in spec.lagged_names()])


def _vllm_lora(spec: EngineSpec, model: torch.nn.Module, tokenizer: Any) -> RolloutEngines:
    """A LoRA policy: the policy and lagged engines are versioned adapters on shared vLLM engines.

    ``vllm_replicas`` engines (servers, or colocated engines) each hold the base model once and every adapter
    version in use; with several, each engine name is a router over them (docs/deployment.md).
    """
    from agentrl_trainer.engines.vllm_lora import vllm_lora_engines

    if spec.num_processes > 1:
        raise NotImplementedError(
            "A LoRA policy (peft_config) with rollout_engine: vllm under several training processes is not "
            "supported (untested: every process would load its own adapters). Train LoRA in one process, or "
            "use rollout_engine: hf."
        )
    policy, lagged = vllm_lora_engines(model, tokenizer, Path(spec.output_dir) / "vllm-model", spec)
    return _with_sampler(spec, policy, lagged)


def _shared_vllm(spec: EngineSpec, model: torch.nn.Module, tokenizer: Any) -> RolloutEngines:
    """Several processes, server mode: one set of servers for the run, shared by every process.

    The main process starts them (or takes ``server_urls`` for the policy; lagged servers are always started,
    one per lagged engine, on the main process's host) and shares their URLs; every process drives them with its
    own engines, but only the main process's load weights (the trainer pushes through
    :func:`~agentrl_trainer.engines.shared_servers.push_from_main`).
    """
    from agentrl_trainer.engines.replicas import one_engine, stage_model
    from agentrl_trainer.engines.shared_servers import SharedServerEngine, share_servers
    from agentrl_trainer.engines.vllm_engine import VLLMServerEngine

    def server() -> VLLMServerConfig:
        return spec.with_server(model=str(stage_model(model, tokenizer, Path(spec.output_dir) / "vllm-model"))).server

    wanted: dict[str, int | list[str]] = {"policy": list(spec.server_urls) or spec.replicas}
    wanted.update(dict.fromkeys(spec.lagged_names(), 1))
    shared = share_servers(wanted, server, is_main=spec.is_main_process)
    engine_class = VLLMServerEngine if spec.is_main_process else SharedServerEngine

    def engine(name: str) -> RolloutEngine:
        replicas = [
            engine_class(
                url, eos_token_id=spec.eos_token_id, name=name, temperature=spec.temperature, version=spec.version
            )
            for url in shared.urls[name]
        ]
        return one_engine(replicas, name)

    return _with_sampler(spec, engine("policy"), [engine(name) for name in spec.lagged_names()], shared)


def _dtype(model: torch.nn.Module) -> str:
    """The trainer's dtype, not vLLM's "auto" (bfloat16 on CPUs): the sampling log-probs must match the loss's."""
    return str(next(model.parameters()).dtype).removeprefix("torch.")
