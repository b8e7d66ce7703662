"""``AlfworldOracle``: plays each game's walkthrough (the expert plan the game was validated with).

The oracle reads the games from the same deterministic, cached generator as the environment, so it can drive
a local env or one behind a controller alike.
"""

from __future__ import annotations

import json
from typing import Any

from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import Oracle
from agentrl_envs.tasks.alfworld.games import GameStore, split_entries

__all__ = ["AlfworldOracle"]


class AlfworldOracle(Oracle):
    """Plays the walkthrough of each ALFWorld game, one ``take_action`` per turn."""

    def __init__(self, *, split: str = "test", data_root: str | None = None, **options: Any) -> None:
        """Load the split's game list (``seed=`` as for the env)."""
        super().__init__(split=split, data_root=data_root, **options)
        self.paths = split_entries(self.data, split)
        self.store = GameStore(self.data, seed=int(options.get("seed", 0)))
        self._plan: list[str] = []
        self._turn = 0

    def begin(self, index: int) -> None:
        """Plan the moves of game ``index``."""
        if not 0 <= index < len(self.paths):
            raise EnvError(f"Index {index} is out of range: the split has {len(self.paths)} games.")
        self._plan = list(self.store.game(self.paths[index])["walkthrough"])
        self._turn = 0

    def act(self, observation: list[Message]) -> Message:
        """The next walkthrough command as a ``take_action`` call (a no-op reply once the plan is spent)."""
        if not self._plan:
            return {"role": "assistant", "content": "I have nothing more to do."}
        command = self._plan.pop(0)
        self._turn += 1
        call = {
            "id": f"oracle_{self._turn}",
            "type": "function",
            "function": {"name": "take_action", "arguments": json.dumps({"action": command})},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
