"""OpenAI chat messages and the parsing of agent actions into them.

Observations are plain message dicts (what an OpenAI-compatible API takes). Actions arrive as an assistant
message dict, its JSON string, a :class:`AssistantMessage`, or (text mode) plain text; :func:`parse_action`
turns each into an :class:`AssistantMessage` without ever failing on what a model wrote.
"""

from __future__ import annotations

import json
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentrl_envs.core.bounded_json import BoundedJSONError, loads_bounded, safe_text

__all__ = [
    "AssistantMessage",
    "FunctionCall",
    "Message",
    "ToolCall",
    "parse_action",
    "system_message",
    "tool_message",
    "user_message",
]

Message = dict[str, Any]
"""An OpenAI chat message as a plain dict: ``{"role": ..., "content": ...}`` (plus ``tool_calls`` etc.)."""


class FunctionCall(BaseModel):
    """The ``function`` part of an OpenAI tool call; ``arguments`` is a JSON string, as the API sends it."""

    model_config = ConfigDict(extra="allow")

    name: str = ""
    arguments: str = "{}"


class ToolCall(BaseModel):
    """One OpenAI tool call."""

    model_config = ConfigDict(extra="allow")

    id: str = ""
    type: Literal["function"] = "function"
    function: FunctionCall = Field(default_factory=FunctionCall)


class AssistantMessage(BaseModel):
    """An assistant message: free text and/or tool calls."""

    model_config = ConfigDict(extra="allow")

    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list[ToolCall])

    def to_dict(self) -> Message:
        """The message as an OpenAI dict, without empty ``tool_calls``."""
        data = self.model_dump(exclude_none=False)
        if not self.tool_calls:
            data.pop("tool_calls")
        return data


def system_message(content: str) -> Message:
    """A system message dict."""
    return {"role": "system", "content": content}


def user_message(content: str) -> Message:
    """A user message dict."""
    return {"role": "user", "content": content}


def tool_message(content: str, tool_call_id: str) -> Message:
    """A tool-result message dict answering the tool call ``tool_call_id``."""
    return {"role": "tool", "tool_call_id": tool_call_id, "content": content}


def parse_action(action: Any, *, mode: Literal["fc", "text"] = "fc") -> AssistantMessage:
    """Turn an agent action into an :class:`AssistantMessage`.

    Model output never makes this fail: a string that is not a JSON message is taken as plain text, a
    malformed tool call keeps what can be read of it (its name, its raw arguments) so the task can answer
    with the right complaint.

    Args:
        action: An assistant message (dict, JSON string or model); in text mode, plain text.
        mode: ``"fc"`` for function calling, ``"text"`` when the whole action is text.

    Returns:
        The assistant message.

    Raises:
        TypeError: If ``action`` is neither a string, a dict nor an :class:`AssistantMessage`; that is a
            programming error in the caller, not model output.
    """
    if isinstance(action, AssistantMessage):
        return action
    if isinstance(action, str):
        if mode == "text":
            return AssistantMessage(content=action)
        return _parse_json_message(action)
    if isinstance(action, dict):
        return _message_from_dict(cast(dict[Any, Any], action))
    raise TypeError(
        f"An action must be an assistant message dict, its JSON string, or text; got {type(action).__name__}. "
        "Pass e.g. {'role': 'assistant', 'content': None, 'tool_calls': [...]}."
    )


def _parse_json_message(text: str) -> AssistantMessage:
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = loads_bounded(stripped)
        except BoundedJSONError:  # not a message after all (or a hostile one): the text is the content
            data = None
        if isinstance(data, dict) and ("tool_calls" in data or "content" in data or "role" in data):
            return _message_from_dict(cast(dict[Any, Any], data))
    return AssistantMessage(content=text)


def _message_from_dict(data: dict[Any, Any]) -> AssistantMessage:
    """Read a message dict from a model (its keys are not always strings)."""
    content = data.get("content")
    if content is not None and not isinstance(content, str):
        content = _content_to_text(content)
    raw_calls: Any = data.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raw_calls = [raw_calls]
    # extra fields pass through (e.g. ``reasoning_content``); keys must be strings to be keyword arguments
    extra = {k: v for k, v in data.items() if isinstance(k, str) and k not in ("role", "content", "tool_calls")}
    calls = [_coerce_tool_call(c) for c in cast(list[Any], raw_calls)]
    return AssistantMessage(content=content, tool_calls=calls, **extra)


def _content_to_text(content: Any) -> str:
    """Join OpenAI content parts (``[{"type": "text", "text": ...}]``) into one string."""
    if isinstance(content, list):
        parts = [_text_part(p) for p in cast(list[Any], content)]
        return "".join(safe_text(p) for p in parts)
    return safe_text(content)


def _text_part(part: Any) -> Any:
    return cast(dict[Any, Any], part).get("text", "") if isinstance(part, dict) else part


def _coerce_tool_call(raw: Any) -> ToolCall:
    """Read a tool call leniently: arguments given as an object are serialised, garbage keeps an empty name."""
    if isinstance(raw, ToolCall):
        return raw
    if not isinstance(raw, dict):
        return ToolCall(function=FunctionCall(name="", arguments=str(raw)))
    raw = cast(dict[Any, Any], raw)
    function: Any = raw.get("function")
    if not isinstance(function, dict):
        function = {"name": raw.get("name", ""), "arguments": raw.get("arguments", "{}")}
    function = cast(dict[Any, Any], function)
    name = function.get("name")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = _arguments_to_json(arguments)
    call_id = raw.get("id")
    try:
        return ToolCall(
            id=call_id if isinstance(call_id, str) else "",
            function=FunctionCall(name=name if isinstance(name, str) else "", arguments=arguments),
        )
    except ValidationError:  # defensive: the fields above are already coerced to str
        return ToolCall(function=FunctionCall(name="", arguments=arguments))


def _arguments_to_json(arguments: Any) -> str:
    """Serialise arguments given as an object; what cannot be JSON stays text, which the tool check refuses."""
    try:
        return json.dumps(arguments)
    except (TypeError, ValueError, RecursionError):  # a set, a 5000-digit int, a cycle, nesting past the stack
        return safe_text(arguments)
