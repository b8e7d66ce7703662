"""What the step fuzz throws at every env, and what it requires of each answer (shared by the test and the bench).

Actions are arbitrary JSON-like assistant messages: dicts with wrong types in every field, their JSON strings,
plain text, text-only replies, unknown and duplicated tools, and arguments that are deep nesting, numbers with
100,000 digits, huge strings, NUL bytes, lone surrogates, wrong types, objects instead of strings, or valid
calls carrying all of those as values. Each variant is one task on one backend, built as its tests build it.

Every step must (see :func:`check_step`): not raise, finish within the variant's limit (its own time limit
plus slack for a loaded machine), never report ``infra_error``, and answer a running episode with at least one
message. A step that ends the episode (a committed answer) may answer with none, as upstream's tasks do.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import strategies as st

import agentrl_envs  # noqa: F401 - registers the AgentBench ids
from agentrl_envs.sandboxes.base import Limits

__all__ = ["VARIANTS", "StepRecord", "Variant", "actions", "check_step", "make_env"]

SLACK_S = 20.0
"""Allowance beyond a task's own limit for a loaded 2-core CI machine."""
QUERY_TIMEOUT_S = 2.0
OS_LIMITS = Limits(memory_mb=256, pids=128, cpus=1.0, command_timeout_s=2.0, disk_mb=128)
OS_WORST_S = 2.0 + 3.0 + 3.0
"""The OS shell's worst case: the command limit, Ctrl-C's grace, then the hard stop's grace."""


@dataclass(frozen=True)
class Variant:
    """One task on one backend: how to build it and how long one step may take."""

    task: str
    backend: str
    options: dict[str, Any]
    limit_s: float
    marks: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        """``task-backend``, the pytest id."""
        return f"{self.task}-{self.backend}"

    @property
    def param(self) -> Any:
        """The variant as a pytest param with its marks."""
        return pytest.param(self, id=self.id, marks=[getattr(pytest.mark, m) for m in self.marks])


VARIANTS = [
    Variant("db", "sqlite", {"backend": "sqlite", "query_timeout_s": QUERY_TIMEOUT_S}, QUERY_TIMEOUT_S + 3),
    Variant(
        "db", "mariadb", {"backend": "mariadb", "query_timeout_s": QUERY_TIMEOUT_S}, QUERY_TIMEOUT_S + 3, ("mariadb",)
    ),
    Variant("os", "bwrap", {"backend": "bwrap", "limits": OS_LIMITS}, OS_WORST_S),
    Variant("os", "docker", {"backend": "docker", "limits": OS_LIMITS}, OS_WORST_S, ("docker",)),
    Variant("kg", "inprocess", {"backend": "inprocess"}, 5.0),
    Variant("kg", "virtuoso", {"backend": "virtuoso"}, 30.0, ("slow",)),
    Variant("webshop", "generated", {"backend": "generated"}, 5.0),
    Variant("alfworld", "inline", {"engine": "inline"}, 10.0),
    Variant("alfworld", "pool", {"engine_pool_size": 1}, 10.0),
    Variant("bfcl_base", "bfcl", {}, 5.0),
]
"""Every task on every backend (ALFWorld: the inline engine and the shared engine-process pool)."""

IDS = {"alfworld": "AgentBench/ALFWorld-v0", "db": "AgentBench/DB-v0", "kg": "AgentBench/KG-v0"}
IDS |= {"os": "AgentBench/OS-v0", "webshop": "AgentBench/WebShop-v0", "bfcl_base": "AgentBench/BFCL-Base-v0"}


def make_env(variant: Variant, **options: Any) -> Any:
    """The variant's env (unwrapped: the fuzz also checks what Gymnasium's checker wrapper would not pass)."""
    return gym.make(IDS[variant.task], split="test", **variant.options, **options).unwrapped


# ----------------------------------------------------------------- strategies

HOSTILE_TEXT = st.sampled_from(
    [
        "",
        "\x00",
        "a\x00b",
        "\ud800",
        "x\udfffy",
        "'",
        '"',
        "\\",
        "`",
        "$(",
        ";--",
        "#0",
        "#999999999999",
        "#-1",
        "%s%n",
        "{}",
        "\r\n",
        "\x1b[31m",
        "\u202e",
        "把铅笔",
        "🙂",
        "x" * 100_000,
        "[" * 10_000,
        "exit",  # the OS shell: model output that ends it is the agent's failure, not infra
        "\x04",
        "kill -9 $$",
        "KILL CONNECTION_ID()",  # MariaDB: the agent ending its own connection
    ]
)
TEXT = st.text(max_size=40) | st.text(st.characters(categories=["Cs", "Cc", "Lo"]), max_size=20)
TEXT = TEXT | HOSTILE_TEXT
HUGE_INT = st.sampled_from([2**64, -(2**63), 10**4000])  # repr-able: hypothesis prints what it drew
SCALARS = (
    st.none() | st.booleans() | st.integers() | HUGE_INT | st.floats() | TEXT
)  # floats include nan and inf, which json.dumps writes as NaN/Infinity
JSON = st.recursive(SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(TEXT, c, max_size=4), max_leaves=12)


def _deep(depth: int, kind: str) -> str:
    opener, closer = ("[", "]") if kind == "array" else ('{"a":', "}")
    return opener * depth + "1" + closer * depth


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value)
    except (ValueError, RecursionError):  # a 5000-digit int: a model cannot write it as JSON either
        return str(value)[:200]


def _value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of a parameter's declared type (strings and arrays of strings in every AgentBench tool)."""
    if schema.get("type") == "array":
        return st.lists(_value(schema.get("items", {})), max_size=3)
    return TEXT


def raw_arguments(parameters: dict[str, dict[str, Any]]) -> st.SearchStrategy[Any]:
    """``function.arguments`` as a model could write them, or as a caller could pass them (not a string)."""
    names = list(parameters) or ["x"]
    valid = st.fixed_dictionaries({p: _value(schema) for p, schema in parameters.items()})
    extra = st.fixed_dictionaries({p: _value(schema) for p, schema in parameters.items()}, optional={"extra": JSON})
    typed = st.dictionaries(st.sampled_from([*names, "x"]) | TEXT, JSON, max_size=3)
    deep = st.builds(_deep, st.integers(0, 120_000), st.sampled_from(["array", "object"]))
    digits = st.integers(1, 100_000).map(lambda n: '{"' + names[0] + '": ' + "7" * n + "}")
    return st.one_of(
        valid.map(_dumps),
        valid.map(_dumps),
        valid.map(_dumps),
        extra.map(_dumps),
        typed.map(_dumps),
        JSON.map(_dumps),
        deep,
        digits,
        TEXT,
        valid.map(lambda v: _dumps(v)[: len(_dumps(v)) // 2]),  # cut short
        typed,  # an object, not a JSON string
        JSON,
    )


def tool_calls(tools: dict[str, dict[str, dict[str, Any]]]) -> st.SearchStrategy[Any]:
    """Tool calls to the task's tools (or unknown ones), well or badly formed, duplicated ids included."""
    names = list(tools)

    def call(name: str) -> st.SearchStrategy[Any]:
        function = st.fixed_dictionaries(
            {"name": st.one_of(st.just(name), st.just(name), st.just(name), TEXT, JSON)},
            optional={"arguments": raw_arguments(tools.get(name, {"x": {"type": "string"}}))},
        )
        return st.fixed_dictionaries(
            {"function": function},
            optional={"id": st.sampled_from(["c1", "c1", "c2", ""]) | JSON, "type": st.just("function") | JSON},
        )

    one = st.sampled_from([*names, *names, "no_such_tool", ""]).flatmap(call)
    return st.lists(one, max_size=3) | one | JSON


def actions(tools: dict[str, dict[str, dict[str, Any]]]) -> st.SearchStrategy[Any]:
    """Assistant messages: dicts (some with wrong types in every field), their JSON strings and plain text."""
    message = st.fixed_dictionaries(
        {},
        optional={
            "role": st.just("assistant") | TEXT,
            "content": st.none() | TEXT | JSON,
            "tool_calls": tool_calls(tools),
            "reasoning_content": TEXT,
        },
    )
    return st.one_of(
        message,
        message,
        message,
        message.map(_dumps),
        TEXT,
        st.builds(_deep, st.integers(0, 50_000), st.just("object")),
    )


def tool_parameters(tools: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Each tool's parameter schemas by name, from OpenAI tool schemas (an env's ``tools``)."""
    return {t["function"]["name"]: dict(t["function"].get("parameters", {}).get("properties", {})) for t in tools}


# ----------------------------------------------------------------- the property


@dataclass
class StepRecord:
    """One fuzzed step: how long it took and how it ended (the bench counts these)."""

    seconds: float
    status: str
    messages: int
    problems: list[str] = field(default_factory=list)


def check_step(env: Any, variant: Variant, action: Any) -> StepRecord:
    """Step ``env`` with ``action`` and list what breaks the contract (an empty list: all held).

    An exception is a problem, not an error of this function, so the bench can count it.
    """
    started = time.monotonic()
    try:
        messages, reward, terminated, truncated, info = env.step(action)
    except Exception as e:  # noqa: BLE001 - the fuzz reports whatever escaped step
        return StepRecord(time.monotonic() - started, "raised", 0, [f"step raised {type(e).__name__}: {e}"[:500]])
    seconds = time.monotonic() - started
    record = StepRecord(seconds, info.get("status", "?"), len(messages))
    if info.get("infra_error") is not False:
        record.problems.append(f"infra_error={info.get('infra_error')!r} ({info.get('error', '')!r:.300})")
    if seconds > variant.limit_s + SLACK_S:
        record.problems.append(f"step took {seconds:.1f} s, past the limit of {variant.limit_s + SLACK_S:.0f} s")
    if info.get("status") == "running" and not messages:
        record.problems.append("a running episode was answered with no message")
    if not all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
        record.problems.append(f"a message without text content: {messages!r:.300}")
    if terminated or truncated:
        env.reset(options={"index": 0})
    return record
