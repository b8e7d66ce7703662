"""The one place that builds a run's engines: the spec read from the config, and the sampler built from the spec.

vLLM itself is not needed here: the server-mode engines are built over given URLs (nothing is started), and the
tests that sample from real vLLM engines built this way are test_vllm_training.py and test_vllm_colocate.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from agentrl_trainer import AgentRLConfig
from agentrl_trainer.engines import factory
from agentrl_trainer.engines.factory import build_sampler
from agentrl_trainer.engines.hf import HFEngine
from agentrl_trainer.engines.router import EngineRouter
from agentrl_trainer.engines.spec import EngineSpec
from agentrl_trainer.engines.vllm_engine import VLLMServerEngine


def _config(tmp_path: Path, **overrides: Any) -> AgentRLConfig:
    values: dict[str, Any] = {"output_dir": str(tmp_path / "run"), "tasks": ["length"], "report_to": "none"}
    return AgentRLConfig(**{**values, **overrides})


def test_the_spec_carries_every_engine_setting_of_the_config(tmp_path: Path, tokenizer: Any) -> None:
    config = _config(
        tmp_path,
        rollout_engine="vllm",
        temperature=0.7,
        lagged_fraction=0.3,
        num_lagged_engines=2,
        lagged_refresh_steps=3,
        seed=11,
        max_total_tokens=2048,
        vllm_replicas=3,
        vllm_server_urls=["http://a:1", "http://b:2"],
        vllm_server_args=["--max-num-seqs", "8"],
        engine_max_batch_size=5,
        engine_num_threads=2,
        engine_cpus=[1, 0],
    )
    spec = EngineSpec.from_config(config, tokenizer, version=7, process_index=1, num_processes=2, is_main_process=False)
    assert (spec.backend, spec.temperature, spec.version, spec.seed) == ("vllm", 0.7, 7, 11)
    assert (spec.eos_token_id, spec.pad_token_id) == (tokenizer.eos_token_id, tokenizer.pad_token_id)
    assert (spec.num_lagged, spec.lagged_fraction, spec.lagged_refresh_steps) == (2, 0.3, 3)
    assert (spec.process_index, spec.num_processes, spec.is_main_process) == (1, 2, False)
    assert (spec.max_batch_size, spec.num_threads, spec.cpus) == (5, 2, (1, 0))
    assert (spec.mode, spec.replicas, spec.server_urls) == ("server", 3, ("http://a:1", "http://b:2"))
    assert (spec.server.max_model_len, spec.server.extra_args) == (2048, ["--max-num-seqs", "8"])
    assert spec.output_dir == config.output_dir
    assert spec.lagged_names() == ["lagged0", "lagged1"]
    # No turn goes to a lagged engine: none is built.
    assert EngineSpec.from_config(_config(tmp_path, num_lagged_engines=2), tokenizer, version=0).num_lagged == 0


def test_hf_engines_are_private_copies_named_and_versioned_by_the_spec(model: Any, tokenizer: Any) -> None:
    spec = EngineSpec(
        backend="hf",
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        temperature=0.5,
        version=3,
        num_lagged=2,
        lagged_fraction=0.25,
        lagged_refresh_steps=4,
        max_batch_size=7,
    )
    sampler = build_sampler(spec, model, tokenizer).sampler
    engines = [sampler.policy, *sampler.lagged]
    assert all(isinstance(e, HFEngine) for e in engines)
    assert [e.name for e in engines] == ["policy", "lagged0", "lagged1"]
    assert {e.version for e in engines} == {3}
    assert {(e.temperature, e.max_batch_size) for e in engines} == {(0.5, 7)}  # type: ignore[attr-defined]
    assert len({id(e.model) for e in engines} | {id(model)}) == 4  # type: ignore[attr-defined]
    assert (sampler.lagged_fraction, sampler.lagged_refresh_steps) == (0.25, 4)


def test_engine_processes_get_a_seed_per_engine_process_and_resume_point(
    monkeypatch: pytest.MonkeyPatch, model: Any, tokenizer: Any
) -> None:
    from agentrl_trainer.engines import hf_process

    built: list[dict[str, Any]] = []

    class Recorder:
        def __init__(self, model: Any, **kwargs: Any) -> None:
            built.append(kwargs)
            self.name, self.version = kwargs["name"], kwargs["version"]

    monkeypatch.setattr(hf_process, "ProcessEngine", Recorder)  # spawning the processes is test_hf_process.py's
    spec = EngineSpec(
        backend="hf_process",
        eos_token_id=1,
        pad_token_id=0,
        temperature=1.0,
        version=5,
        num_lagged=1,
        lagged_fraction=0.5,
        seed=10,
        process_index=2,
        num_threads=3,
        cpus=(0,),
    )
    build_sampler(spec, model, tokenizer)
    assert [(b["name"], b["seed"]) for b in built] == [
        ("policy", 10 + 5 + 7919 * 6 + 1_000_003 * 2),
        ("lagged0", 10 + 5 + 7919 * 7 + 1_000_003 * 2),
    ]
    assert {(b["num_threads"], b["cpus"], b["version"]) for b in built} == {(3, (0,), 5)}


def test_vllm_engines_over_given_servers_load_the_staged_model_in_the_trainers_dtype(
    tmp_path: Path, model: Any, tokenizer: Any
) -> None:
    spec = EngineSpec(
        backend="vllm",
        eos_token_id=tokenizer.eos_token_id,
        temperature=0.9,
        version=2,
        server_urls=("http://127.0.0.1:1", "http://127.0.0.1:2"),
        output_dir=str(tmp_path),
    )
    engines = build_sampler(spec, model, tokenizer)
    policy = engines.sampler.policy
    assert isinstance(policy, EngineRouter) and policy.name == "policy" and policy.version == 2
    assert [r.base_url for r in policy.replicas] == list(spec.server_urls)  # type: ignore[attr-defined]
    assert all(isinstance(r, VLLMServerEngine) and r.temperature == 0.9 for r in policy.replicas)
    assert engines.shared_servers is None
    assert (tmp_path / "vllm-model" / "config.json").is_file()  # staged for the servers the trainer would start


def test_a_lora_policy_with_vllm_under_several_processes_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # peft is not installed in this venv: stand in for a peft model; the refusal comes before any engine starts.
    monkeypatch.setattr(factory, "is_peft_model", lambda model: True)
    spec = EngineSpec(backend="vllm", eos_token_id=1, temperature=1.0, version=0, num_processes=2)
    with pytest.raises(NotImplementedError, match="several training processes"):
        build_sampler(spec, torch.nn.Linear(2, 2), tokenizer=None)


def test_the_engines_package_imports_only_the_protocol_until_a_driver_is_used() -> None:
    """An engine process and the rollout loop import the protocol; they must not pay for torch, httpx or vLLM."""
    import subprocess
    import sys

    probe = (
        "import sys, agentrl_trainer.engines as e; e.RolloutEngine; "
        "print(sorted(m for m in ('torch', 'httpx', 'vllm', 'agentrl_envs') if m in sys.modules)); "
        "e.EngineSpec; print('httpx' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["[]", "True"]
