import pytest

from agentrl_envs.core import EnvError, FunctionCall, ToolBox, ToolCall, ToolCallError

from .toy_env import TOOLS


def check(name: str, arguments: str) -> object:
    return ToolBox(TOOLS).check(ToolCall(id="c", function=FunctionCall(name=name, arguments=arguments)))


@pytest.mark.parametrize(
    ("name", "arguments", "error", "detail"),
    [
        ("echo", '{"text": "hi"}', None, ""),
        ("echo", "", ToolCallError.INVALID_ARGUMENTS, "'text' is a required property"),
        ("nope", "{}", ToolCallError.UNKNOWN_TOOL, "Unknown tool 'nope'; available tools: echo, answer."),
        ("echo", "{'text': 1}", ToolCallError.MALFORMED_ARGUMENTS, "not valid JSON"),
        ("echo", "[1]", ToolCallError.MALFORMED_ARGUMENTS, "must be a JSON object, got list"),
        ("echo", '{"text": 5}', ToolCallError.INVALID_ARGUMENTS, "5 is not of type 'string' (at text)"),
        ("answer", '{"value": 1, "x": 2}', ToolCallError.INVALID_ARGUMENTS, "Additional properties"),
    ],
)
def test_check(name: str, arguments: str, error: ToolCallError | None, detail: str) -> None:
    checked = check(name, arguments)
    assert checked.error == error
    assert detail in checked.detail
    assert checked.ok == (error is None)


def test_huge_argument_errors_are_clipped() -> None:
    checked = check("answer", '{"value": "' + "x" * 100_000 + '"}')
    assert checked.error == ToolCallError.INVALID_ARGUMENTS and len(checked.detail) < 600


def test_invalid_schema_is_rejected_at_construction() -> None:
    bad = [{"type": "function", "function": {"name": "f", "parameters": {"type": "no-such-type"}}}]
    with pytest.raises(EnvError, match="Tool 'f' has an invalid parameters schema"):
        ToolBox(bad)


def test_subset_keeps_the_chosen_tools_in_order_and_checks_only_them() -> None:
    box = ToolBox(TOOLS).subset(["answer"])
    assert box.names == ["answer"] and box.schemas == [TOOLS[1]]
    echo = box.check(ToolCall(id="c", function=FunctionCall(name="echo", arguments='{"text": "hi"}')))
    assert echo.error == ToolCallError.UNKNOWN_TOOL
    assert box.check(ToolCall(id="c", function=FunctionCall(name="answer", arguments='{"value": 1}'))).ok
    with pytest.raises(EnvError, match=r"No tools \['nope'\]"):
        ToolBox(TOOLS).subset(["nope"])
