"""Gymnasium spaces for chat environments: observations are message lists, actions are messages or text.

``gymnasium.spaces.Text`` only holds a fixed alphabet, so these spaces accept any string. Sampling is
seeded like every Gymnasium space, which keeps ``check_env``'s determinism checks meaningful.
"""

from __future__ import annotations

import json
import string
from typing import Any, cast

import numpy as np
from gymnasium import spaces

from agentrl_envs.core.messages import AssistantMessage

__all__ = ["ActionSpace", "MessagesSpace"]

_ROLES = ("system", "user", "assistant", "tool")
_ALPHABET = string.ascii_letters + string.digits + " ,.;:'\"()[]{}*=<>-_"


def _random_text(rng: np.random.Generator, max_length: int = 40) -> str:
    length = int(rng.integers(0, max_length + 1))
    return "".join(_ALPHABET[i] for i in rng.integers(0, len(_ALPHABET), size=length))


class MessagesSpace(spaces.Space[list[dict[str, Any]]]):
    """A list of OpenAI chat message dicts (each with a string ``role``)."""

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        """Create the space."""
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        """Messages have no fixed-size vector form."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, Any]]:
        """A short list of random messages."""
        count = int(self.np_random.integers(1, 3))
        return [
            {"role": _ROLES[int(self.np_random.integers(0, len(_ROLES)))], "content": _random_text(self.np_random)}
            for _ in range(count)
        ]

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a list of message dicts."""
        return isinstance(x, list) and all(
            isinstance(m, dict) and isinstance(cast(dict[Any, Any], m).get("role"), str) for m in cast(list[Any], x)
        )

    def __repr__(self) -> str:
        return "MessagesSpace()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MessagesSpace)


class ActionSpace(spaces.Space[Any]):
    """An assistant action: a message dict, its JSON string, or plain text.

    ``sample()`` returns either plain text or an assistant message with one call to a random tool whose
    arguments are random values of roughly the right shape, so a random agent exercises the tool paths.
    """

    def __init__(self, tools: list[dict[str, Any]] | None = None, seed: int | np.random.Generator | None = None):
        """Create the space.

        Args:
            tools: The task's OpenAI tool schemas, used only by ``sample()``.
            seed: Seed for ``sample()``.
        """
        super().__init__(shape=None, dtype=None, seed=seed)
        self.tools = list(tools or [])

    @property
    def is_np_flattenable(self) -> bool:
        """Actions have no fixed-size vector form."""
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        """Random text, or an assistant message calling a random tool."""
        rng = self.np_random
        if not self.tools or rng.random() < 0.25:
            return _random_text(rng)
        function = self.tools[int(rng.integers(0, len(self.tools)))]["function"]
        arguments = {
            name: _random_value(rng, schema)
            for name, schema in function.get("parameters", {}).get("properties", {}).items()
        }
        call_id = f"call_{int(rng.integers(0, 10**8)):08d}"
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": function["name"], "arguments": json.dumps(arguments)},
                }
            ],
        }

    def contains(self, x: Any) -> bool:
        """Whether ``x`` can be passed to ``step``."""
        return isinstance(x, str | dict | AssistantMessage)

    def __repr__(self) -> str:
        return f"ActionSpace(tools={[t['function']['name'] for t in self.tools]})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActionSpace) and other.tools == self.tools


def _random_value(rng: np.random.Generator, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "array":
        return [_random_value(rng, schema.get("items", {})) for _ in range(int(rng.integers(0, 3)))]
    if kind == "integer":
        return int(rng.integers(0, 100))
    if kind == "number":
        return float(rng.random() * 100)
    if kind == "boolean":
        return bool(rng.integers(0, 2))
    if "enum" in schema:
        return schema["enum"][int(rng.integers(0, len(schema["enum"])))]
    return _random_text(rng)
