"""vLLM engines behind one engine name: replicas started (servers or colocated) or given, and a router over them.

The trainer's current model and tokenizer are saved once to a staging directory (:func:`stage_model`) and every
server loads that, so the servers start at exactly the trainer's weights (also after a resume) and at its
version. One engine name (``policy``, ``lagged0``, ...) gets ``replicas`` servers behind an
:class:`EngineRouter`, or a single :class:`VLLMServerEngine` when ``replicas`` is 1. With ``server_urls`` the
policy uses servers someone else started (a multi-node deployment, docs/deployment.md) instead of launching its
own. In colocate mode the same staged directory is loaded by in-process
:class:`~agentrl_trainer.engines.vllm_colocate.VLLMColocateEngine` instances instead of servers.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentrl_trainer.engines.protocol import RolloutEngine
from agentrl_trainer.engines.router import EngineRouter
from agentrl_trainer.engines.spec import EngineSpec
from agentrl_trainer.engines.vllm_engine import VLLMServerEngine
from agentrl_trainer.engines.vllm_server import VLLMServer, VLLMServerConfig

__all__ = ["one_engine", "stage_model", "start_servers", "vllm_engine", "vllm_replicas"]


def stage_model(model: Any, tokenizer: Any, directory: Path) -> Path:
    """Save ``model`` and ``tokenizer`` where vLLM servers can load them; returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


def vllm_engine(name: str, spec: EngineSpec) -> RolloutEngine:
    """One engine named ``name`` over ``spec.replicas`` new vLLM engines, or over ``spec.server_urls``."""
    return one_engine(vllm_replicas(name, spec), name)


def one_engine(replicas: Sequence[RolloutEngine], name: str) -> RolloutEngine:
    """The only replica, or an :class:`EngineRouter` named ``name`` over several."""
    return replicas[0] if len(replicas) == 1 else EngineRouter(replicas, name=name)


def vllm_replicas(name: str, spec: EngineSpec) -> list[Any]:
    """The replicas :func:`vllm_engine` routes over: ``VLLMServerEngine``s (server mode) or ``VLLMColocateEngine``s.

    ``spec.replicas`` new servers started in parallel (each loading ``spec.server``), the servers at
    ``spec.server_urls``, or with ``spec.mode == "colocate"`` as many in-process ``AsyncLLM`` engines. All start
    at ``spec.version``. LoRA-versioned engines (:mod:`agentrl_trainer.engines.vllm_lora`) host their adapters
    on these too.

    Raises:
        ValueError: If ``spec.replicas`` is below 1.
        RuntimeError: If a server does not start; servers already started are stopped.
    """
    if spec.replicas < 1:
        raise ValueError(f"vllm_replicas must be >= 1, got {spec.replicas}.")
    sampling: dict[str, Any] = {"eos_token_id": spec.eos_token_id, "name": name, "temperature": spec.temperature}
    if spec.mode == "colocate":
        from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine

        engines: list[Any] = []
        try:
            for _ in range(spec.replicas):  # one after another: each start-up already uses every core
                engines.append(VLLMColocateEngine(spec.server, **sampling, version=spec.version))
        except BaseException:
            for engine in engines:
                engine.close()
            raise
    elif spec.server_urls:
        engines = [VLLMServerEngine(url, **sampling, version=spec.version) for url in spec.server_urls]
    else:
        servers = start_servers(name, spec.server, spec.replicas)
        engines = [VLLMServerEngine(s.base_url, **sampling, version=spec.version, server=s) for s in servers]
    return engines


def start_servers(name: str, server: VLLMServerConfig, replicas: int) -> list[VLLMServer]:
    """Start ``replicas`` servers of ``server`` (each on a free port) side by side; all started, or none.

    Raises:
        RuntimeError: If a server does not start; the others are stopped.
    """
    servers = [VLLMServer(replace(server, port=0)) for _ in range(replicas)]
    with ThreadPoolExecutor(replicas) as pool:
        futures = [pool.submit(s.start) for s in servers]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        for s in servers:
            s.stop()
        raise RuntimeError(f"{len(errors)} of {replicas} vLLM servers for {name!r} failed to start") from errors[0]
    return servers
