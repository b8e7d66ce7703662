import json

import pytest

from agentrl_envs.core import AssistantMessage, parse_action


def test_dict_with_tool_calls_is_parsed() -> None:
    message = parse_action(
        {
            "role": "assistant",
            "content": "x",
            "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"k": 1}'}}],
        }
    )
    assert message.content == "x"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [("a", "f", '{"k": 1}')]


def test_arguments_given_as_object_are_serialised() -> None:
    message = parse_action({"tool_calls": [{"function": {"name": "f", "arguments": {"k": [1, 2]}}}]})
    assert json.loads(message.tool_calls[0].function.arguments) == {"k": [1, 2]}


def test_json_string_and_dict_give_the_same_message() -> None:
    action = {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": {"name": "f"}}]}
    assert parse_action(json.dumps(action)) == parse_action(action)


@pytest.mark.parametrize("text", ["hello", "{broken", '{"a": 1}', "", "[1, 2]"])
def test_other_strings_are_plain_text(text: str) -> None:
    assert parse_action(text) == AssistantMessage(content=text)


def test_text_mode_never_reads_json() -> None:
    text = json.dumps({"content": "x", "tool_calls": []})
    assert parse_action(text, mode="text").content == text


@pytest.mark.parametrize(
    "raw_call",
    [42, "call", {"function": "not a dict"}, {"function": {"name": 7, "arguments": None}}],
)
def test_garbage_tool_calls_are_kept_without_raising(raw_call: object) -> None:
    message = parse_action({"tool_calls": [raw_call]})
    assert len(message.tool_calls) == 1 and isinstance(message.tool_calls[0].function.name, str)


def test_content_parts_are_joined() -> None:
    message = parse_action({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})
    assert message.content == "ab"


def test_unknown_fields_pass_through() -> None:
    message = parse_action({"content": "x", "reasoning_content": "why"})
    assert message.to_dict()["reasoning_content"] == "why"


def test_non_message_action_is_a_caller_error() -> None:
    with pytest.raises(TypeError, match="An action must be an assistant message dict"):
        parse_action(3)
