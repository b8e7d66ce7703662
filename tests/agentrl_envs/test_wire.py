"""The wire shapes: the exact bytes the worker and the controller have always sent, and the parser's defaults."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentrl_envs.wire import (
    NO_RESULT,
    Observation,
    cancel_body,
    env_out,
    interact_request,
    start_sample_request,
    worker_interact_answer,
    worker_interact_request,
    worker_start_sample_request,
)

TOOLS = [{"type": "function", "function": {"name": "echo", "parameters": {}}}]
SESSION = 1764612345678000


def _bytes(payload: Any) -> bytes:
    """As Starlette's ``JSONResponse`` and the fast path render a body."""
    return json.dumps(payload, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def _finished() -> Observation:
    return Observation(
        messages=[{"role": "user", "content": 'ünï "q"'}],
        tools=TOOLS,
        status="completed",
        finish=True,
        reward=1.0,
        metrics={"score": 1.0, "infra_error": False, "round": 3, "fidelity": "upstream", "error": "é"},
    )


# The bytes below were produced by the hand-built dicts this module replaced (``LocalWorker._observation`` and
# ``SessionManager._answer`` at ee73617) for the same observations.


def test_a_workers_env_out_is_byte_for_byte_what_it_was() -> None:
    assert (
        _bytes(_finished().worker_payload())
        == (
            '{"messages":[{"role":"user","content":"ünï \\"q\\""}],'
            '"tools":[{"type":"function","function":{"name":"echo","parameters":{}}}],'
            '"status":"completed","finish":true,"reward":1.0,'
            '"metric":{"score":1.0,"infra_error":false,"round":3,"fidelity":"upstream","error":"é"}}'
        ).encode()
    )
    running = Observation(messages=[{"role": "user", "content": "go"}], tools=TOOLS)
    assert _bytes(running.worker_payload()) == (
        b'{"messages":[{"role":"user","content":"go"}],'
        b'"tools":[{"type":"function","function":{"name":"echo","parameters":{}}}],'
        b'"status":"running","finish":false,"reward":0.0,"metric":{}}'
    )


def test_the_controllers_answer_is_byte_for_byte_what_it_was() -> None:
    worker_out = {
        "messages": [{"role": "user", "content": "ünï"}],
        "tools": [{"type": "function", "function": {"name": "echo"}}],
        "status": "running",
        "finish": False,
        "reward": 0.0,
        "metric": {"round": 1},
    }
    assert (
        _bytes(Observation.parse(worker_out).client_payload(SESSION))
        == (
            '{"session_id":1764612345678000,"messages":[{"role":"user","content":"ünï"}],'
            '"tools":[{"type":"function","function":{"name":"echo"}}],"status":"running","finish":false,"reward":0.0,'
            '"metrics":{"round":1}}'
        ).encode()
    )
    # ``metrics`` wins over ``metric``, a numeric string reward is read, a null result is kept
    finished = {"messages": [], "status": "completed", "reward": "1", "metric": {"score": 1.0}}
    observation = Observation.parse({**finished, "finish": True, "metrics": {"score": 0.5}, "result": None})
    observation.tools = TOOLS
    assert _bytes(observation.client_payload(SESSION)) == (
        b'{"session_id":1764612345678000,"messages":[],'
        b'"tools":[{"type":"function","function":{"name":"echo","parameters":{}}}],'
        b'"status":"completed","finish":true,"reward":1.0,"metrics":{"score":0.5},"result":null}'
    )


def test_an_observation_survives_both_spellings() -> None:
    sent = _finished()
    from_worker = Observation.parse(json.loads(_bytes(sent.worker_payload())))
    assert from_worker == sent
    from_controller = Observation.parse(json.loads(_bytes(sent.client_payload(SESSION))))
    assert from_controller.session_id == SESSION and from_controller.result is NO_RESULT
    from_controller.session_id = None
    assert from_controller == sent
    with_result = Observation(messages=[{"role": "user", "content": "x"}], result={"answer": 42})
    assert Observation.parse(with_result.client_payload(3)).result == {"answer": 42}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, Observation()),
        ({"status": "task error"}, Observation(status="task error", finish=True)),  # no finish: the status decides
        ({"status": "completed", "finish": False}, Observation(status="completed", finish=False)),
        ({"status": None, "reward": "bad", "messages": None}, Observation()),
        ({"metrics": [1], "metric": {"score": 1}}, Observation(metrics={"score": 1})),
        ({"metrics": {"a": 1}, "metric": {"b": 2}}, Observation(metrics={"a": 1})),
        ({"reward": 1, "tools": []}, Observation(reward=1.0, tools=[])),
    ],
)
def test_missing_or_malformed_fields_take_their_defaults(data: dict[str, Any], expected: Observation) -> None:
    assert Observation.parse(data) == expected


def test_request_bodies_are_what_the_protocol_names() -> None:
    message = {"role": "assistant", "content": "hi"}
    assert _bytes(start_sample_request("dbbench-std", 3)) == b'{"name":"dbbench-std","index":3,"custom_task":null}'
    assert _bytes(interact_request([message])) == b'{"messages":[{"role":"assistant","content":"hi"}]}'
    assert _bytes(worker_start_sample_request(7, "2", None)) == b'{"index":"2","custom_task":null,"session_id":7}'
    assert _bytes(worker_interact_request(7, [message])) == (
        b'{"session_id":7,"messages":[{"role":"assistant","content":"hi"}]}'
    )
    assert _bytes(cancel_body(7)) == b'{"session_id":7}'


def test_env_out_unwraps_a_workers_interact_answer() -> None:
    inner = Observation(messages=[{"role": "user", "content": "x"}]).worker_payload()
    assert env_out(worker_interact_answer(7, inner)) is inner
    assert env_out({"session_id": 7}) is None
    assert env_out({"env_out": "no"}) is None
    assert env_out(["env_out"]) is None
