"""Rollout engines beyond the in-process ``hf`` one: vLLM servers and a router over engine replicas.

Nothing here imports vLLM: the trainer talks to vLLM servers over HTTP, and the server runs from its own
interpreter (``scripts/vllm_cpu_env.sh`` builds one on CPU machines; GPU machines install ``vllm``).
"""

from agentrl_trainer.engines.router import EngineRouter, ReplicaFailure
from agentrl_trainer.engines.vllm_engine import VLLMServerEngine
from agentrl_trainer.engines.vllm_server import VLLMServer, VLLMServerConfig

__all__ = ["EngineRouter", "ReplicaFailure", "VLLMServer", "VLLMServerConfig", "VLLMServerEngine"]
