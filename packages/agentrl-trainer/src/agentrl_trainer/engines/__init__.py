"""Rollout engines beyond the in-process ``hf`` one: vLLM servers, colocated vLLM, a router over engine replicas.

Importing this package does not import vLLM. Server mode talks to vLLM servers over HTTP, and the servers run
from their own interpreter (``scripts/vllm_cpu_env.sh`` builds one on CPU machines; GPU machines install
``vllm``). Colocate mode (:mod:`agentrl_trainer.engines.vllm_colocate`, and the LoRA-versioned engines of
:mod:`agentrl_trainer.engines.vllm_lora` on top of it) imports vLLM when an engine is built, so the trainer must
then run where vllm is importable.
"""

from agentrl_trainer.engines.router import EngineRouter, ReplicaFailure
from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine
from agentrl_trainer.engines.vllm_engine import VLLMServerEngine
from agentrl_trainer.engines.vllm_lora import LoRAVersionEngine, LoRAVersions
from agentrl_trainer.engines.vllm_server import VLLMServer, VLLMServerConfig

__all__ = [
    "EngineRouter",
    "LoRAVersionEngine",
    "LoRAVersions",
    "ReplicaFailure",
    "VLLMColocateEngine",
    "VLLMServer",
    "VLLMServerConfig",
    "VLLMServerEngine",
]
