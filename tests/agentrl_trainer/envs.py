"""Small ToolEnvs for trainer tests: reward varies with what a random tiny model writes, and a crashing env."""

from __future__ import annotations

import threading
import time
from typing import Any

from agentrl_envs.core import AssistantMessage, SampleStatus, Turn
from agentrl_envs.core.messages import system_message, user_message
from tests.agentrl_envs.core.toy_env import ToyEnv

TEXTS = ["Say something long.", "Write a few words.", "Answer with text."]


class LengthEnv(ToyEnv):
    """Two turns; the second answer's length (up to 20 characters) is the reward, so random models get a spread."""

    task = "length"
    default_max_rounds = 2

    def _start(self, index: int) -> list[dict[str, Any]]:
        return [system_message("Talk."), user_message(TEXTS[index % len(TEXTS)])]

    def _respond(self, message: AssistantMessage) -> Turn:
        if self._round < 2:
            return Turn([user_message("More.")])
        return Turn([], SampleStatus.COMPLETED, reward=min(1.0, len(message.content or "") / 20))


class FlakyEnv(LengthEnv):
    """Crashes in the middle of the first ``crashes`` episodes (shared count), then behaves."""

    task = "flaky"
    crashes = 1
    _lock = threading.Lock()
    crashed = 0

    def _respond(self, message: AssistantMessage) -> Turn:
        with FlakyEnv._lock:
            crash = self._round == 2 and FlakyEnv.crashed < FlakyEnv.crashes
            if crash:
                FlakyEnv.crashed += 1
        if crash:
            raise ConnectionError("backend went away")
        return super()._respond(message)


class SlowEnv(LengthEnv):
    """A LengthEnv whose steps take ``delay_s``."""

    task = "slow"
    delay_s = 0.05

    def _respond(self, message: AssistantMessage) -> Turn:
        time.sleep(self.delay_s)
        return super()._respond(message)


CORPUS = [*TEXTS, "Talk.", "More.", "Find the number.", *[f"Sample {i}." for i in range(5)], "Use a tool."]
