"""A task that does nothing, for measuring the controller's own overhead (``bench/controller_load.py``)."""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

from agentrl_envs.core import AssistantMessage, SampleStatus, ToolEnv, Turn
from agentrl_envs.core.messages import system_message, tool_message, user_message

__all__ = ["NoopEnv"]

_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "noop",
            "description": "Do nothing; calling it with finish=true ends the episode with reward 1.",
            "parameters": {
                "type": "object",
                "properties": {"finish": {"type": "boolean"}},
                "additionalProperties": False,
            },
        },
    }
]


class NoopEnv(ToolEnv):
    """Answers every message at once; an episode lasts ``max_rounds`` turns or until ``noop(finish=true)``."""

    task: ClassVar[str] = "noop"
    default_max_rounds: ClassVar[int] = 1_000_000

    def __init__(self, *, samples: int = 1000, delay_s: float = 0.0, **kwargs: Any) -> None:
        """Set up ``samples`` identical samples; each step takes ``delay_s`` (see :class:`ToolEnv` for the rest)."""
        self.samples = samples
        self.delay_s = delay_s
        self.nonblocking = not delay_s
        """Steps without a delay return at once, so the worker runs them on its event loop (no thread hop)."""
        super().__init__(**kwargs)

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return _TOOLS

    def num_samples(self) -> int:
        """How many samples the split has."""
        return self.samples

    def _start(self, index: int) -> list[dict[str, Any]]:
        return [system_message("No-op task."), user_message(f"Sample {index}.")]

    def _respond(self, message: AssistantMessage) -> Turn:
        if self.delay_s:
            time.sleep(self.delay_s)  # stands for a slow backend (a database, a shell)
        if not message.tool_calls:
            return Turn([user_message("ok")])
        call = message.tool_calls[0]
        try:
            arguments = json.loads(call.function.arguments)
        except ValueError:
            arguments = None
        if isinstance(arguments, dict) and arguments.get("finish") is True:
            return Turn([tool_message("done", call.id)], SampleStatus.COMPLETED, reward=1.0)
        return Turn([tool_message("ok", call.id)])
