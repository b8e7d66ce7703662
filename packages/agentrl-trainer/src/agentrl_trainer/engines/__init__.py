"""The rollout engines and their protocol: ``hf``, ``hf_process``, vLLM servers, colocated vLLM, LoRA versions.

Every engine is a :class:`~agentrl_trainer.engines.protocol.RolloutEngine` (token ids in; token ids, log-probs
and policy version out). :func:`agentrl_trainer.engines.factory.build_sampler` builds a run's policy and
lagged engines, and the sampler over them, from one :class:`~agentrl_trainer.engines.spec.EngineSpec` read from
the config; the trainer only calls it.

Importing this package imports neither vLLM nor torch, and the vLLM drivers only when one of their names is
used. Server mode talks to vLLM servers over HTTP, and the servers run from their own interpreter
(``scripts/vllm_cpu_env.sh`` builds one on CPU machines; GPU machines install ``vllm``). Colocate mode
(:mod:`agentrl_trainer.engines.vllm_colocate`, and the LoRA-versioned engines of
:mod:`agentrl_trainer.engines.vllm_lora` on top of it) imports vLLM when an engine is built, so the trainer
must then run where vllm is importable. The ``hf`` engines (:mod:`agentrl_trainer.engines.hf`,
:mod:`agentrl_trainer.engines.hf_process`) import torch and transformers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentrl_trainer.engines.protocol import RolloutEngine

if TYPE_CHECKING:
    from agentrl_trainer.engines.router import EngineRouter, ReplicaFailure
    from agentrl_trainer.engines.spec import EngineSpec
    from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine
    from agentrl_trainer.engines.vllm_engine import VLLMServerEngine
    from agentrl_trainer.engines.vllm_lora import LoRAVersionEngine, LoRAVersions
    from agentrl_trainer.engines.vllm_server import VLLMServer, VLLMServerConfig

__all__ = [
    "EngineRouter",
    "EngineSpec",
    "LoRAVersionEngine",
    "LoRAVersions",
    "ReplicaFailure",
    "RolloutEngine",
    "VLLMColocateEngine",
    "VLLMServer",
    "VLLMServerConfig",
    "VLLMServerEngine",
]

# Imported on first use, so that an engine process (which imports agentrl_trainer.engines.hf_process) and the
# rollout loop (which imports the protocol) do not pay for httpx, the environments' package and the vLLM drivers.
_LAZY = {
    "EngineRouter": "router",
    "ReplicaFailure": "router",
    "EngineSpec": "spec",
    "VLLMColocateEngine": "vllm_colocate",
    "VLLMServerEngine": "vllm_engine",
    "LoRAVersionEngine": "vllm_lora",
    "LoRAVersions": "vllm_lora",
    "VLLMServer": "vllm_server",
    "VLLMServerConfig": "vllm_server",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"agentrl_trainer.engines.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'agentrl_trainer.engines' has no attribute {name!r}")
