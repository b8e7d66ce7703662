"""Property-based fuzz of ``step`` for every task and backend (issue 16): model output is never an infra error.

Hypothesis draws arbitrary JSON-like assistant messages (see :mod:`tests.agentrl_envs.step_fuzz`) and steps
one env per variant, resetting when an episode ends; every step must answer without raising, within the
task's limits, without ``infra_error``, and with a message while the episode runs. The explicit examples are
the issue's own inputs, so each variant meets them whatever hypothesis draws. CI runs ``MAX_EXAMPLES`` per
variant; ``bench/step_fuzz.py`` runs a longer budget.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agentrl_envs.sandboxes.conftest import docker_engine  # noqa: F401 - fixture

from .step_fuzz import VARIANTS, Variant, actions, check_step, make_env, tool_parameters

MAX_EXAMPLES = int(os.environ.get("AGENTRL_STEP_FUZZ_EXAMPLES", "50"))
"""Examples per variant in CI; `bench/step_fuzz.py` runs a longer budget."""


def _call(name: str, arguments: Any) -> dict[str, Any]:
    call = {"id": "c1", "function": {"name": name, "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


ISSUE_ARGUMENTS = ["[" * 50_000 + "]" * 50_000, '{"q": ' + "1" * 100_000 + "}"]
"""Issue 16's inputs: 100 KB of nested brackets and a number with 100,000 digits."""


@pytest.fixture(scope="module", params=[v.param for v in VARIANTS])
def fuzzed_env(request: pytest.FixtureRequest) -> Iterator[tuple[Variant, Any, dict[str, dict[str, Any]]]]:
    variant: Variant = request.param
    if variant.backend == "docker":
        request.getfixturevalue("docker_engine")
    env = make_env(variant, max_rounds=10_000)
    try:
        env.reset(options={"index": 0})
        yield variant, env, tool_parameters(env.tools)
    finally:
        env.close()


def test_the_issues_inputs_are_invalid_arguments_for_every_tool(fuzzed_env) -> None:
    variant, env, tools = fuzzed_env
    for name in tools:
        for arguments in ISSUE_ARGUMENTS:
            record = check_step(env, variant, _call(name, arguments))
            assert not record.problems, (name, record)
            assert record.status == "running" and record.messages >= 1


@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_step_never_raises_hangs_or_reports_infra_error(fuzzed_env, data: st.DataObject) -> None:
    variant, env, tools = fuzzed_env
    action = data.draw(actions(tools), label="action")
    record = check_step(env, variant, action)
    assert not record.problems, (json.dumps(action, default=str)[:2000], record)
