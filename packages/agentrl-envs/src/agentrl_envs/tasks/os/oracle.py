"""The OS task's oracle: plays each sample's gold solution through the environment.

``match`` samples: answer the gold string. ``check`` samples: run the ``example`` script as the bash action
(its stderr dropped, since the check chain sees only the example's stdout while the terminal shows both),
then answer with what it printed. Where the checks verify the system's state rather than the answer, the
example has performed the operation and the answer is ignored (``finish_action`` would commit its
``thought`` the same way).
"""

from __future__ import annotations

import json
from typing import Any

from agentrl_envs.core.errors import DataError
from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import Oracle
from agentrl_envs.tasks.os.data import OSSample, load_samples

__all__ = ["OSOracle"]


class OSOracle(Oracle):
    """Plays the gold solution of OS samples."""

    def __init__(self, **kwargs: Any) -> None:
        """Load the split's samples (see :class:`Oracle`)."""
        super().__init__(**kwargs)
        self.samples = load_samples(self.data, self.split, self.options.get("train_file"))
        self.texts = self.data.prompts("os")
        self.sample: OSSample | None = None
        self._ran_example = False

    def begin(self, index: int) -> None:
        """Prepare to play sample ``index``."""
        self.sample = self.samples[index]
        self._ran_example = False

    def act(self, observation: list[Message]) -> Message:
        """Run the example first when there is one, then answer."""
        sample = self.sample
        if sample is None:
            raise DataError("Call begin(index) before act().")
        if sample.match is not None:
            return _call("answer_action", answer=str(sample.match.get("answer", "")))
        if sample.example is None:
            raise DataError("This check sample has no example script to play.")
        if not self._ran_example:
            self._ran_example = True
            if sample.example.language != "bash":
                raise DataError(f"The oracle plays bash examples only, not {sample.example.language!r}.")
            return _call("bash_action", script=f"{{\n{sample.example.code}\n}} 2>/dev/null")
        return _call("answer_action", answer=self._output(observation))

    def _output(self, observation: list[Message]) -> str:
        """The example's output, read back from the tool message."""
        content = next((m.get("content") or "" for m in observation if m.get("role") in ("tool", "user")), "")
        if content == self.texts["empty_output_message"]:
            return ""
        prefix = self.texts["tool_result_template"].split("{output}")[0]
        return content[len(prefix) :] if content.startswith(prefix) else content


def _call(name: str, **arguments: str) -> Message:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }
