"""Tool schemas and the checking of tool calls against them.

Each task declares its OpenAI tool schemas; :class:`ToolBox` checks a call's name, parses its JSON arguments
(within the bounds of :mod:`agentrl_envs.core.bounded_json`) and validates them with jsonschema against the
task's own schema. A call that fails becomes a :class:`CheckedCall` with an ``error`` that the task words into
a tool message; nothing here raises on model output.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast

from jsonschema import exceptions
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from agentrl_envs.core.bounded_json import BoundedJSONError, loads_bounded
from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.messages import ToolCall

__all__ = ["CheckedCall", "ToolBox", "ToolCallError"]


class ToolCallError(StrEnum):
    """Why a tool call could not be executed."""

    UNKNOWN_TOOL = "unknown tool"
    MALFORMED_ARGUMENTS = "malformed arguments"
    INVALID_ARGUMENTS = "invalid arguments"


@dataclass(frozen=True, slots=True)
class CheckedCall:
    """A tool call after checking: either ``arguments`` are valid or ``error`` says why not."""

    id: str
    name: str
    arguments: dict[str, Any]
    error: ToolCallError | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        """Whether the call can be executed."""
        return self.error is None


class ToolBox:
    """A task's tools: their OpenAI schemas and a compiled validator per tool."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        """Compile the validators.

        Args:
            tools: OpenAI tool schemas (``{"type": "function", "function": {"name", "parameters", ...}}``).

        Raises:
            EnvError: If a schema is malformed.
        """
        self.schemas = tools
        self._validators: dict[str, Validator] = {}
        for tool in tools:
            function = tool.get("function", {})
            name = function.get("name")
            parameters = function.get("parameters", {"type": "object"})
            if not name:
                raise EnvError(f"Tool schema without a function name: {tool!r}")
            try:
                cls = validator_for(parameters)
                cls.check_schema(parameters)
            except SchemaError as e:
                raise EnvError(f"Tool {name!r} has an invalid parameters schema: {e.message}") from e
            self._validators[name] = cls(parameters)

    def subset(self, names: list[str]) -> ToolBox:
        """The tools ``names``, in that order, reusing their compiled validators (no schema is checked again).

        Raises:
            EnvError: If a name is not one of the tools.
        """
        unknown = [name for name in names if name not in self._validators]
        if unknown:
            raise EnvError(f"No tools {unknown} in this toolbox; it has {self.names}.")
        by_name = {tool["function"]["name"]: tool for tool in self.schemas}
        subset = ToolBox([])
        subset.schemas = [by_name[name] for name in names]
        subset._validators = {name: self._validators[name] for name in names}
        return subset

    @property
    def names(self) -> list[str]:
        """Tool names in declaration order."""
        return list(self._validators)

    def check(self, call: ToolCall) -> CheckedCall:
        """Check one tool call: known name, JSON-object arguments, schema-valid arguments."""
        name = call.function.name
        if name not in self._validators:
            detail = f"Unknown tool {_clip(name, 100)!r}; available tools: {', '.join(self.names)}."
            return CheckedCall(call.id, name, {}, ToolCallError.UNKNOWN_TOOL, detail)
        raw = call.function.arguments.strip() or "{}"
        try:
            arguments = loads_bounded(raw)
        except BoundedJSONError as e:  # syntax, nesting or number length: all the model's to fix
            detail = f"Arguments of {name!r} {e.predicate}."
            return CheckedCall(call.id, name, {}, ToolCallError.MALFORMED_ARGUMENTS, detail)
        if not isinstance(arguments, dict):
            detail = f"Arguments of {name!r} must be a JSON object, got {type(arguments).__name__}."
            return CheckedCall(call.id, name, {}, ToolCallError.MALFORMED_ARGUMENTS, detail)
        arguments = cast(dict[str, Any], arguments)  # JSON object keys are strings
        # typeshed's jsonschema stub leaves best_match's return unannotated: it is the error or None
        errors = self._validators[name].iter_errors(arguments)
        error = cast(ValidationError | None, exceptions.best_match(errors))  # pyright: ignore[reportUnknownMemberType]
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            detail = f"Invalid arguments for {name!r}: {error.message}" + (f" (at {where})" if where else "") + "."
            return CheckedCall(call.id, name, arguments, ToolCallError.INVALID_ARGUMENTS, _clip(detail))
        return CheckedCall(call.id, name, arguments)


def _clip(text: str, limit: int = 500) -> str:
    """Keep error details readable when the offending value is huge (a 100 KB argument, say)."""
    return text if len(text) <= limit else text[:limit] + "..."
