"""A minimal ToolEnv used to specify the base class's behaviour (the GenericTestEnv of these tests)."""

from __future__ import annotations

from typing import Any

from agentrl_envs.core import AssistantMessage, SampleStatus, ToolEnv, Turn
from agentrl_envs.core.messages import system_message, tool_message, user_message

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo text back.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "answer",
            "description": "Submit the answer.",
            "parameters": {
                "type": "object",
                "properties": {"value": {"type": "integer"}},
                "required": ["value"],
                "additionalProperties": False,
            },
        },
    },
]


class ToyEnv(ToolEnv):
    """Samples are numbers; answering with the sample's number wins."""

    task = "toy"
    default_max_rounds = 3

    def __init__(self, *, fail_on: str | None = None, **kwargs: Any) -> None:
        self.fail_on = fail_on
        self.finished = 0
        super().__init__(**kwargs)

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return TOOLS

    def num_samples(self) -> int:
        return 5

    def _start(self, index: int) -> list[dict[str, Any]]:
        if self.fail_on == "start":
            raise ConnectionError("backend down")
        return [system_message("Find the number."), user_message(f"Sample {index}.")]

    def _respond(self, message: AssistantMessage) -> Turn:
        if self.fail_on == "step":
            raise ConnectionError("backend down")
        if not message.tool_calls:
            return Turn([user_message("Use a tool.")])
        out = []
        for call in message.tool_calls:
            checked = self.toolbox.check(call)
            if not checked.ok:
                out.append(tool_message(checked.detail, call.id))
            elif checked.name == "echo":
                out.append(tool_message(checked.arguments["text"], call.id))
            else:
                won = checked.arguments["value"] == self.index
                return Turn(out, SampleStatus.COMPLETED, reward=float(won))
        return Turn(out)

    def _finish(self) -> None:
        self.finished += 1
