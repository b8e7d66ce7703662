"""Reference computations with transformers, for comparing the vllm engine against the hf engine's maths."""

from __future__ import annotations

from typing import Any

import torch


def prompts(tokenizer: Any, n: int = 4) -> list[list[int]]:
    """Chat-template prompts (as the rollout loop renders them) of different lengths."""
    from agentrl_trainer.rollout.chat import render_prompt
    from tests.agentrl_trainer.envs import CORPUS

    return [render_prompt(tokenizer, [{"role": "user", "content": " ".join(CORPUS[: i + 1])}], None) for i in range(n)]


def token_logprobs(model: Any, prompt: list[int], completion: list[int], temperature: float = 1.0) -> list[float]:
    """log p(completion | prompt) per token under softmax(logits / temperature): what the hf engine returns."""
    ids = torch.tensor([prompt + completion])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt) - 1 : -1].float() / temperature
    return torch.log_softmax(logits, -1).gather(-1, torch.tensor(completion).unsqueeze(-1)).squeeze(-1).tolist()


def greedy(model: Any, prompt: list[int], max_new_tokens: int, eos_token_id: int) -> list[int]:
    """transformers' greedy continuation, cut after the end-of-turn token."""
    with torch.no_grad():
        out = model.generate(
            torch.tensor([prompt]),
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=eos_token_id,
            pad_token_id=eos_token_id,
        )
    return out[0, len(prompt) :].tolist()


def perturbed(model: Any, scale: float = 0.05, seed: int = 1) -> dict[str, torch.Tensor]:
    """The model's state dict with every tensor nudged (tied tensors stay tied), as an optimizer step would."""
    generator = torch.Generator().manual_seed(seed)
    out: dict[str, torch.Tensor] = {}
    by_storage: dict[int, torch.Tensor] = {}
    for name, t in model.state_dict().items():
        key = t.untyped_storage().data_ptr()
        if key not in by_storage:
            by_storage[key] = t + scale * torch.randn(t.shape, generator=generator)
        out[name] = by_storage[key]
    return out
