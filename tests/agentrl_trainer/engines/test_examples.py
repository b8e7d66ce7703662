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
