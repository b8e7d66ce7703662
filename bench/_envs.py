"""In-process calibration tasks for the trainer benches: cheap to step, with a reward a tiny model can move.

``talk``: two turns; the second answer's length (up to 20 characters) is the reward, so a random tiny model
already gets a spread of rewards within a group. ``StepLatency`` adds a heavy-tailed (Pareto) delay to every
step of any env (``LatencyEnv`` is ``talk`` with it), standing in for the tool calls, SQL queries and web pages
of a deployed task. ``TalkEnv.observation`` is appended to the first turn's answer: set it (e.g. to
:func:`table_text`) to give the environment's message the length of a real task's observation (a table, a web
page, a command's output).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from agentrl_envs.core import AssistantMessage, SampleStatus, ToolEnv, Turn
from agentrl_envs.core.messages import system_message, user_message

PROMPTS = ["Say something long.", "Write a few words.", "Answer with text.", "Tell me more.", "Describe it."]
CORPUS = [*PROMPTS, "Talk.", "More.", "Use a tool.", "Finish.", "Find the number."]

_NAMES = ["Alice", "Bob", "Carol", "Dmitri", "Eve", "Farah", "Gus", "Hana", "Ivan", "Jun", "Kofi", "Lena"]
_CITIES = ["Paris", "Lagos", "Lima", "Osaka", "Perth", "Quito", "Rome", "Seoul", "Tunis", "Vigo"]


def table_text(rows: int, seed: int = 0) -> str:
    """A SQL-result-like table of ``rows`` rows (what the DB task's observations look like), repeatable by seed."""
    rng = random.Random(seed)
    lines = ["| id | name | city | year | score |", "|---|---|---|---|---|"]
    for i in range(rows):
        name, city = rng.choice(_NAMES), rng.choice(_CITIES)
        lines.append(f"| {i + 1} | {name} | {city} | {rng.randint(1950, 2020)} | {rng.randint(0, 999) / 10} |")
    return "\n".join(lines)


class TalkEnv(ToolEnv):
    """Two turns of free text; reward = length of the second answer / 20, capped at 1."""

    task = "talk"
    default_max_rounds = 2
    observation = ""
    """Text appended to the environment's first answer (empty: a two-word answer)."""

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return []

    def num_samples(self) -> int:
        return len(PROMPTS)

    def _start(self, index: int) -> list[dict[str, Any]]:
        return [system_message("Talk."), user_message(PROMPTS[index % len(PROMPTS)])]

    def _respond(self, message: AssistantMessage) -> Turn:
        if self._round < 2:
            return Turn([user_message("\n".join(filter(None, ["More.", self.observation])))])
        return Turn([], SampleStatus.COMPLETED, reward=min(1.0, len(message.content or "") / 20))


class StepLatency:
    """Mixin for any ``ToolEnv``: every step first sleeps a Pareto time, median ``scale_s * 2**(1/alpha)``, capped.

    Stands in for the tool calls, SQL queries and web pages of a deployed task; one generator, shared by every
    instance, makes the delay sequence repeatable (``reseed``).
    """

    scale_s = 0.1
    alpha = 1.5
    cap_s = 4.0
    _rng = random.Random(0)
    _lock = threading.Lock()
    slept_s = 0.0
    """Sum of the delays since the last ``reseed`` (over every instance; concurrent steps overlap in time)."""
    steps = 0
    """Steps since the last ``reseed``."""

    @classmethod
    def reseed(cls, seed: int) -> None:
        """Make the delay sequence repeatable (one generator shared by every instance); zero the counters."""
        StepLatency._rng = random.Random(seed)
        StepLatency.slept_s, StepLatency.steps = 0.0, 0

    def _respond(self, message: AssistantMessage) -> Turn:
        with StepLatency._lock:
            delay = min(self.cap_s, self.scale_s * StepLatency._rng.paretovariate(self.alpha))
            StepLatency.slept_s += delay
            StepLatency.steps += 1
        time.sleep(delay)
        return super()._respond(message)  # type: ignore[misc]


class LatencyEnv(StepLatency, TalkEnv):
    """A TalkEnv whose steps sleep a Pareto-distributed time (see :class:`StepLatency`)."""
