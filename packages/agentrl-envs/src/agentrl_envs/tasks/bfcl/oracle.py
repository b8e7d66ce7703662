"""``BFCLOracle``: plays an entry's ground-truth call sequence through the environment.

Each turn's ground-truth call strings (``sort('final_report.pdf')``) become one assistant message with those
tool calls, in order, followed by a message without calls that ends the turn; a turn whose ground truth is
empty (the model should ask instead of acting) gets the closing message only. Positional arguments are
named from the backend method's signature, so the JSON arguments are what a model would send.
"""

from __future__ import annotations

import ast
import inspect
import json
from typing import Any, ClassVar

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import DataError, EnvError
from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import Oracle
from agentrl_envs.tasks.bfcl.data import CATEGORIES, BFCLCategory, BFCLSample, load_samples
from agentrl_envs.tasks.bfcl.env import open_bfcl
from agentrl_envs.tasks.bfcl.upstream import BFCLUpstream, load_upstream

__all__ = [
    "BFCLBaseOracle",
    "BFCLLongContextOracle",
    "BFCLMissFuncOracle",
    "BFCLMissParamOracle",
    "BFCLOracle",
    "parse_call",
]

END_OF_TURN = "Done."


class BFCLOracle(Oracle):
    """Plays the ground truth of each entry of :attr:`category`."""

    category: ClassVar[BFCLCategory]

    def __init__(self, *, split: str = "test", data_root: str | None = None, **options: Any) -> None:
        """Load the category's entries and BFCL's backends (for the methods' signatures)."""
        super().__init__(split=split, data_root=data_root, **options)
        self.upstream: BFCLUpstream = load_upstream(self.data.path)
        self.samples: list[BFCLSample] = load_samples(self.data.path, self.category)
        self._plan: list[Message] = []

    def _find_data(self, data_root: str | None) -> DataRoot:
        return open_bfcl(data_root)

    def begin(self, index: int) -> None:
        """Plan the moves of entry ``index``."""
        if not 0 <= index < len(self.samples):
            raise EnvError(f"Index {index} is out of range: {self.category.name} has {len(self.samples)} entries.")
        sample = self.samples[index]
        classes = [self.upstream.backend_class(name) for name in sample.involved_classes]
        self._plan = []
        for turn, calls in enumerate(sample.ground_truth):
            if calls:
                tool_calls = [
                    _tool_call(*parse_call(text, classes), f"oracle_{turn}_{n}") for n, text in enumerate(calls)
                ]
                self._plan.append({"role": "assistant", "content": None, "tool_calls": tool_calls})
            self._plan.append({"role": "assistant", "content": END_OF_TURN})

    def act(self, observation: list[Message]) -> Message:
        """The next planned move (a closing message once the plan is spent)."""
        if not self._plan:
            return {"role": "assistant", "content": END_OF_TURN}
        return self._plan.pop(0)


def parse_call(text: str, classes: list[type[Any]]) -> tuple[str, dict[str, Any]]:
    """A ground-truth call string as ``(function name, keyword arguments)``.

    Args:
        text: One call, e.g. ``mv(source='a.txt', destination='b')`` or ``sort('report.pdf')``.
        classes: The entry's backend classes; the one that has the method names positional arguments.

    Raises:
        DataError: If the text is not a call of a backend method with literal arguments.
    """
    try:
        node = ast.parse(text, mode="eval").body
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            raise ValueError("not a plain function call")
        args = [ast.literal_eval(a) for a in node.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg is not None}
    except (SyntaxError, ValueError) as e:
        raise DataError(f"Ground-truth call {text!r} is not a function call with literal arguments: {e}") from e
    name = node.func.id
    owner = next((cls for cls in classes if callable(getattr(cls, name, None))), None)
    if owner is None:
        raise DataError(f"Ground-truth call {text!r}: no backend of the entry has a method {name!r}.")
    try:
        bound = inspect.signature(getattr(owner, name)).bind(None, *args, **kwargs)
    except TypeError as e:
        raise DataError(f"Ground-truth call {text!r} does not fit {owner.__name__}.{name}: {e}") from e
    return name, {key: value for key, value in list(bound.arguments.items())[1:]}


def _tool_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


class BFCLBaseOracle(BFCLOracle):
    """Oracle of ``bfcl_base``."""

    category: ClassVar[BFCLCategory] = CATEGORIES["bfcl_base"]


class BFCLMissFuncOracle(BFCLOracle):
    """Oracle of ``bfcl_miss_func``."""

    category: ClassVar[BFCLCategory] = CATEGORIES["bfcl_miss_func"]


class BFCLMissParamOracle(BFCLOracle):
    """Oracle of ``bfcl_miss_param``."""

    category: ClassVar[BFCLCategory] = CATEGORIES["bfcl_miss_param"]


class BFCLLongContextOracle(BFCLOracle):
    """Oracle of ``bfcl_long_context``."""

    category: ClassVar[BFCLCategory] = CATEGORIES["bfcl_long_context"]
