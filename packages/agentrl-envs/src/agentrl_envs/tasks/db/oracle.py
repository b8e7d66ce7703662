"""``DBOracle``: plays a DBBench sample's gold solution through the environment.

Query samples commit their ``label``; INSERT/DELETE/UPDATE samples run the gold statement (``label[0]``)
and then commit, so the table hash is what gets graded.
"""

from __future__ import annotations

import json
from typing import Any

from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import Oracle
from agentrl_envs.tasks.db.data import DBSample, load_samples
from agentrl_envs.tasks.db.grader import is_modification

__all__ = ["DBOracle"]


def _call(name: str, arguments: dict[str, Any], number: int) -> Message:
    call = {
        "id": f"oracle_{number}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class DBOracle(Oracle):
    """Plays the gold answer of each DBBench sample."""

    def __init__(self, *, split: str = "test", data_root: str | None = None, **options: Any) -> None:
        """Load the split's samples (``train_file=`` as for the env)."""
        super().__init__(split=split, data_root=data_root, **options)
        self.samples: list[DBSample] = load_samples(self.data, split, options.get("train_file"))
        self._plan: list[Message] = []

    def begin(self, index: int) -> None:
        """Plan the moves of sample ``index``."""
        if not 0 <= index < len(self.samples):
            raise EnvError(f"Index {index} is out of range: the split has {len(self.samples)} samples.")
        sample = self.samples[index]
        if is_modification(sample.query_type):
            self._plan = [
                _call("execute_sql", {"query": sample.label[0]}, 0),
                _call("commit_final_answer", {"answers": []}, 1),
            ]
        else:
            answers = [str(value) for value in sample.label]
            self._plan = [_call("commit_final_answer", {"answers": answers}, 0)]

    def act(self, observation: list[Message]) -> Message:
        """The next planned move (a no-op reply once the plan is spent)."""
        if not self._plan:
            return {"role": "assistant", "content": "I have nothing more to do."}
        return self._plan.pop(0)
