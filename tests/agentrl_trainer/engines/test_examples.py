"""The vLLM example configs name only real fields, and the CPU one builds a valid config with the vllm engine."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
import yaml

from agentrl_trainer import AgentRLConfig
from agentrl_trainer.cli import ModelArguments

CONFIGS = Path(__file__).parents[3] / "examples" / "configs"
VLLM_CONFIGS = ["vllm_cpu.yaml", "gpu_1node_8gpu.yaml", "gpu_multinode.yaml"]


@pytest.mark.parametrize("name", VLLM_CONFIGS)
def test_every_key_is_a_config_field(name: str) -> None:
    values = yaml.safe_load((CONFIGS / name).read_text())
    known = {f.name for f in fields(AgentRLConfig)} | {f.name for f in fields(ModelArguments)}
    assert set(values) <= known, set(values) - known
    assert values["rollout_engine"] == "vllm"


def test_the_cpu_config_is_valid_and_its_tiny_model_fits_vllms_cpu_attention(tmp_path: Path) -> None:
    values = yaml.safe_load((CONFIGS / "vllm_cpu.yaml").read_text())
    model_keys = {f.name for f in fields(ModelArguments)}
    config = AgentRLConfig(**{k: v for k, v in values.items() if k not in model_keys} | {"output_dir": str(tmp_path)})
    assert config.rollout_engine == "vllm"
    heads = 4  # TinyModelSpec's default
    assert values["tiny_hidden_size"] // heads in (32, 64, 80, 96, 112, 128)


def test_an_unknown_engine_names_the_choices(tmp_path: Path) -> None:
    choices = r"\['hf', 'hf_process', 'vllm'\]"
    with pytest.raises(ValueError, match=rf"rollout_engine='sglang' is not supported; choose one of {choices}"):
        AgentRLConfig(output_dir=str(tmp_path), tasks=["db"], rollout_engine="sglang")


def test_vllm_mode_is_server_by_default_and_colocate_refuses_server_urls(tmp_path: Path) -> None:
    assert AgentRLConfig(output_dir=str(tmp_path), tasks=["db"]).vllm_mode == "server"  # TRL's default is colocate
    with pytest.raises(ValueError, match=r"vllm_mode='remote' is not supported; choose one of \['server', 'colocate']"):
        AgentRLConfig(output_dir=str(tmp_path), tasks=["db"], rollout_engine="vllm", vllm_mode="remote")
    with pytest.raises(ValueError, match="vllm_server_urls needs vllm_mode=server"):
        AgentRLConfig(
            output_dir=str(tmp_path), vllm_mode="colocate", vllm_server_urls=["http://10.0.0.1:8000"], tasks=["db"]
        )


def test_both_modes_pass_the_same_engine_flags() -> None:
    from agentrl_trainer.engines.vllm_colocate import WORKER_EXTENSION
    from agentrl_trainer.engines.vllm_server import VLLMServer, VLLMServerConfig, engine_flags

    config = VLLMServerConfig(model="/m", dtype="float32", extra_args=["--enable-lora"])
    server = VLLMServer(config).command("python")
    colocate = engine_flags(config, worker_extension=WORKER_EXTENSION)
    assert server[server.index("--model") :] == [*colocate[:-3], "vllm_worker_ext.WeightSyncExtension", *colocate[-2:]]
    assert colocate[-1] == "--enable-lora" and "--enforce-eager" in colocate
    assert colocate[colocate.index("--logprobs-mode") + 1] == "processed_logprobs"
