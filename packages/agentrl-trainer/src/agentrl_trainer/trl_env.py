"""Our environments through TRL's ``environment_factory`` interface (``GRPOTrainer`` and ``AsyncGRPOTrainer``).

TRL (1.16) drives an environment as a Python object: ``reset(**row)`` starts an episode for a dataset row, every
public method is a tool the model may call (its JSON schema is read from the signature and the Google
docstring), and ``get_reward()`` scores the finished rollout. Our ``ToolEnv`` speaks OpenAI function calling
instead: tools are JSON schemas and an action is an assistant message. :func:`trl_environment` builds, per
task, a class whose methods are the task's tools (one method per schema, with a signature and docstring that
render to the same schema), so a TRL trainer can train on any AgentBench task unchanged::

    from agentrl_trainer.trl_env import trl_dataset, trl_environment

    make_db = lambda: agentrl_envs.make("db", split="dev", backend="sqlite").unwrapped
    trainer = GRPOTrainer(model, args=GRPOConfig(...), train_dataset=trl_dataset(make_db, range(8)),
                          environment_factory=trl_environment(make_db))

The rows of :func:`trl_dataset` carry the task's first messages (system prompt and question) as ``prompt``
and the sample ``index``, which ``reset`` uses to start the same sample in the environment.

Two differences from our own rollout loop follow from TRL's interface, not from the adapter: TRL ends an
episode as soon as the model answers without a tool call (our loop hands that answer to the environment,
which decides), and each tool call of a message is one environment step (our envs see the whole message).
"""

from __future__ import annotations

import inspect
import itertools
import json
import logging
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from datasets import Dataset

from agentrl_envs.core.errors import InfraError

logger = logging.getLogger(__name__)

__all__ = ["TRLEnvironment", "trl_dataset", "trl_environment"]

_JSON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
}
_ITEM_TYPES: dict[str, Any] = {"string": list[str], "integer": list[int], "number": list[float]}
_ENDED = "The episode has ended; no further tool calls are answered."


class TRLEnvironment:
    """Base of the classes :func:`trl_environment` builds: one ``ToolEnv`` episode per ``reset``.

    Subclasses get one public method per tool of the task; each call is one ``env.step`` with an assistant
    message holding that call, and returns the environment's answer as text.
    """

    _make_env: ClassVar[staticmethod[[], Any]]
    """Builds the wrapped environment (set on each generated subclass; private, so TRL does not take it for a tool)."""

    def __init__(self) -> None:
        """Open the environment (TRL builds one instance per concurrent rollout and resets it between uses)."""
        self.env = type(self)._make_env()
        self.reward = 0.0
        self.is_done = False
        self.steps = 0
        self._call_ids = itertools.count()

    def reset(self, index: int = 0, **row: Any) -> None:
        """Start sample ``index`` of the split; its first messages are already the row's ``prompt``.

        Returns ``None``: TRL appends a returned string to the prompt, and the prompt already holds the question.
        """
        self.env.reset(options={"index": int(index)})
        self.reward, self.is_done, self.steps = 0.0, False, 0

    def get_reward(self) -> float:
        """The episode's reward so far (0 when the model stopped calling tools before the task ended)."""
        return self.reward

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        """One tool call as one environment step; the new messages come back as the tool's text."""
        if self.is_done:
            return _ENDED
        call: dict[str, Any] = {"id": f"call_{next(self._call_ids)}", "type": "function"}
        call["function"] = {"name": name, "arguments": json.dumps(arguments)}
        messages, reward, terminated, truncated, _ = self.env.step(
            {"role": "assistant", "content": None, "tool_calls": [call]}
        )
        self.steps += 1
        self.reward += float(reward)
        self.is_done = terminated or truncated
        return "\n".join(str(m.get("content") or "") for m in messages)


def trl_environment(make_env: Callable[[], Any], *, name: str | None = None) -> type[TRLEnvironment]:
    """A TRL environment class over ``make_env``'s task: pass it as ``environment_factory`` (or a dict of them).

    Args:
        make_env: Returns an unwrapped ``ToolEnv`` (e.g. ``lambda: agentrl_envs.make("db", ...).unwrapped``);
            called once here to read the task's tool schemas and once per instance TRL creates.
        name: Class name (TRL logs an environment's reward under it); default ``<Task>Environment``.

    Raises:
        ValueError: If a tool's parameters use a JSON type with no Python equivalent TRL can render.
    """
    probe = make_env()
    try:
        schemas, task = list(probe.tools), str(probe.task)
    finally:
        probe.close()
    methods = {schema["function"]["name"]: _tool_method(schema["function"]) for schema in schemas}
    cls_name = name or f"{task.capitalize()}Environment"
    return type(cls_name, (TRLEnvironment,), {"_make_env": staticmethod(make_env), **methods})


def trl_dataset(make_env: Callable[[], Any], indices: Iterable[int], *, environment: str | None = None) -> Dataset:
    """Rows for TRL: ``prompt`` (the sample's first messages), ``index``, and ``environment`` when given.

    Args:
        make_env: As for :func:`trl_environment`; each sample is reset once to read its first messages.
        indices: Sample indices of the split.
        environment: The environment's key in a dict ``environment_factory`` (several tasks in one run).

    A sample whose reset fails with an infrastructure error (e.g. DB dev sample 5, a column named ``''`` that
    MySQL refuses) is left out with a warning naming it: TRL would otherwise fail on it mid-training, at every
    rollout that draws it.
    """
    env = make_env()
    rows = []
    try:
        for index in indices:
            try:
                messages, _ = env.reset(options={"index": index})
            except InfraError as e:
                logger.warning("sample %d cannot start (%s); left out of the TRL dataset", index, e)
                continue
            row: dict[str, Any] = {"prompt": [_chat_message(m) for m in messages], "index": index}
            if environment is not None:
                row["environment"] = environment
            rows.append(row)
    finally:
        env.close()
    return Dataset.from_list(rows)


def _chat_message(message: dict[str, Any]) -> dict[str, str]:
    """Role and text only: a dataset column needs one shape for every message."""
    return {"role": message["role"], "content": str(message.get("content") or "")}


def _tool_method(function: dict[str, Any]) -> Callable[..., str]:
    """A method whose signature and docstring render (``transformers.get_json_schema``) to ``function``'s schema."""
    name = function["name"]
    parameters = function.get("parameters") or {}
    properties: dict[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or [])

    def method(self: TRLEnvironment, **arguments: Any) -> str:
        return self._call(name, arguments)

    hints = {key: _python_type(name, key, spec) for key, spec in properties.items()}
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    for key in sorted(properties, key=lambda k: k not in required):  # required before optional
        default = inspect.Parameter.empty if key in required else None
        hint = hints[key] if key in required else hints[key] | None
        signature.append(inspect.Parameter(key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
    method.__signature__ = inspect.Signature(signature, return_annotation=str)
    method.__annotations__ = {p.name: p.annotation for p in signature[1:]} | {"return": str}
    method.__name__ = method.__qualname__ = name
    args = "".join(f"\n    {key}: {spec.get('description') or key}" for key, spec in properties.items())
    method.__doc__ = f"{function.get('description') or name}\n\nArgs:{args}\n" if args else function.get("description")
    return method


def _python_type(tool: str, key: str, spec: dict[str, Any]) -> Any:
    kind = spec.get("type")
    if kind == "array":
        item_kind = (spec.get("items") or {}).get("type")
        return _ITEM_TYPES.get(item_kind, list) if isinstance(item_kind, str) else list
    if kind in _JSON_TYPES:
        return _JSON_TYPES[kind]
    raise ValueError(
        f"Tool {tool!r}, parameter {key!r}: JSON type {kind!r} has no Python type TRL can render; "
        f"give it one of {sorted([*_JSON_TYPES, 'array'])}."
    )
