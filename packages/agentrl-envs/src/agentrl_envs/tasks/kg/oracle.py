"""The KG oracle: plays a sample's gold actions as tool calls, then answers with the last variable."""

from __future__ import annotations

import json
from typing import Any

from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import Oracle
from agentrl_envs.tasks.kg.data import KGSample, load_samples

__all__ = ["KGOracle", "gold_tool_calls"]

_NEW_VARIABLE = {"get_neighbors", "intersection", "argmax", "argmin", "count"}


def gold_tool_calls(sample: KGSample, tools_param_order: dict[str, list[str]]) -> list[dict[str, Any]]:
    """The gold actions as OpenAI tool calls (argument names from upstream's ``TOOLS_PARAM_ORDER``)."""
    calls = []
    for step, action in enumerate(sample.actions):
        arguments = dict(zip(tools_param_order[action.name], action.args, strict=True))
        calls.append(
            {
                "id": f"call_gold_{step}",
                "type": "function",
                "function": {"name": action.name, "arguments": json.dumps(arguments)},
            }
        )
    return calls


class KGOracle(Oracle):
    """Gold actions one per turn, then ``Final Answer: #<last>`` (or ``submit_answer`` with ``answer_tool``)."""

    def __init__(self, **kwargs: Any) -> None:
        """See :class:`Oracle`; ``answer_tool=True`` answers with ``submit_answer``, ``train_file`` as the env's."""
        super().__init__(**kwargs)
        self.samples = load_samples(self.data, self.split, self.options.get("train_file"))
        self.order = self.data.prompts("kg")["tools_param_order"]
        self.answer_tool = bool(self.options.get("answer_tool", False))
        self._calls: list[dict[str, Any]] = []
        self._last = -1

    def begin(self, index: int) -> None:
        """Prepare the gold calls of sample ``index``."""
        sample = self.samples[index]
        self._calls = gold_tool_calls(sample, self.order)
        self._last = sum(a.name in _NEW_VARIABLE for a in sample.actions) - 1

    def act(self, observation: list[Message]) -> Message:
        """The next gold call, or the final answer once they are all played."""
        if self._calls:
            return {"role": "assistant", "content": None, "tool_calls": [self._calls.pop(0)]}
        if self.answer_tool:
            call: dict[str, Any] = {"id": "call_answer", "type": "function"}
            call["function"] = {"name": "submit_answer", "arguments": json.dumps({"variable": f"#{self._last}"})}
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        return {"role": "assistant", "content": f"Final Answer: #{self._last}"}
