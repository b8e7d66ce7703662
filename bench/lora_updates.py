"""LoRA adapter update latency of the LoRA-versioned vLLM engines: server mode vs colocate mode, side by side.

A peft LoRA model (rank 8 on every projection) on the tests' tiny Qwen2; :func:`vllm_lora_engines` builds the
policy engine in each mode (one vLLM server over HTTP, one colocated ``AsyncLLM``), and each round pushes a new
adapter version to both, alternating which goes first. An update is timed end to end as the trainer sees it:
write the adapter's LoRA tensors (peft layout), load them (``/v1/load_lora_adapter`` or ``AsyncLLM.add_lora``),
and release the previous version (its unload runs in the background). Then a greedy request with the new adapter
checks it serves. Runs where vllm and peft import (colocate mode is in process):

    PYTHONPATH=packages/agentrl-envs/src:packages/agentrl-trainer/src $(bash scripts/vllm_cpu_env.sh) \
        bench/lora_updates.py --rounds 7

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from agentrl_trainer.engines.spec import EngineSpec
from agentrl_trainer.engines.vllm_lora import vllm_lora_engines
from agentrl_trainer.engines.vllm_server import VLLMServerConfig
from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model, load_tokenizer

TEXTS = ["Say something long.", "Write a few words.", "Answer with text.", "Find the number.", "Use a tool."]
MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _stepped(state: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {k: (0.1 * torch.randn(v.shape, generator=generator) if ".lora_" in k else v) for k, v in state.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="Adapter versions pushed to each mode.")
    parser.add_argument("--rank", type=int, default=8)
    args = parser.parse_args()

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    path = build_tiny_model(TEXTS, TinyModelSpec(num_attention_heads=2, num_key_value_heads=1))
    tokenizer = load_tokenizer(path)
    model = get_peft_model(
        AutoModelForCausalLM.from_pretrained(path), LoraConfig(r=args.rank, lora_alpha=16, target_modules=MODULES)
    )
    state = {k: v.clone() for k, v in model.state_dict().items()}
    adapter_bytes = sum(v.numel() * v.element_size() for k, v in state.items() if ".lora_" in k)
    server = VLLMServerConfig(model="", dtype="float32", max_model_len=2048)
    engines: dict[str, Any] = {}
    startup: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for mode in ("server", "colocate"):
                started = time.perf_counter()
                spec = EngineSpec(
                    backend="vllm",
                    eos_token_id=tokenizer.eos_token_id,
                    temperature=0.0,
                    version=0,
                    server=server,
                    mode=mode,
                )
                engines[mode], _ = vllm_lora_engines(model, tokenizer, Path(tmp) / mode, spec)
                startup[mode] = time.perf_counter() - started
            times: dict[str, list[float]] = {mode: [] for mode in engines}
            prompt = tokenizer("Say something long.")["input_ids"]
            for version in range(1, args.rounds + 1):
                new_state = _stepped(state, version)
                order = list(engines) if version % 2 else list(reversed(engines))
                for mode in order:
                    started = time.perf_counter()
                    engines[mode].update_weights(new_state, version)
                    times[mode].append(time.perf_counter() - started)
                    generation = asyncio.run(engines[mode].agenerate(prompt, max_new_tokens=4))
                    assert generation.version == version, generation
        finally:

            async def close() -> None:
                for engine in engines.values():
                    await engine.aclose()

            asyncio.run(close())
    medians = {mode: statistics.median(t) for mode, t in times.items()}
    print(f"tiny Qwen2 + LoRA rank {args.rank} on {len(MODULES)} projections: adapter {adapter_bytes / 2**10:.0f} KiB")
    print(f"{'mode':<9} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'start s':>8}")
    for mode, t in times.items():
        print(f"{mode:<9} {medians[mode] * 1e3:>10.1f} {min(t) * 1e3:>8.1f} {max(t) * 1e3:>8.1f} {startup[mode]:>8.0f}")
    print(f"server/colocate update: {medians['server'] / medians['colocate']:.2f}x")
    print(
        json.dumps(
            {
                "rounds": args.rounds,
                "adapter_kib": round(adapter_bytes / 2**10, 1),
                **{f"{mode}_update_ms": round(m * 1e3, 2) for mode, m in medians.items()},
                **{f"{mode}_startup_s": round(s, 1) for mode, s in startup.items()},
            }
        )
    )


if __name__ == "__main__":
    main()
