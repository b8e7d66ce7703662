"""Cross-policy sampling: a fraction of turns is sampled by lagged engines whose weights refresh every K steps.

The paper's cross-policy sampling widens exploration by letting an older policy take some of an episode's
turns. Which engine takes a turn is drawn per turn; the engine's name and version are recorded on the
turn, and the loss's importance ratio uses that engine's own log-probs (token level).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import TYPE_CHECKING

from agentrl_trainer.engines.protocol import RolloutEngine

if TYPE_CHECKING:
    import torch

__all__ = ["EngineSampler"]


class EngineSampler:
    """Chooses the engine for each turn and pushes weights to the policy and lagged engines."""

    def __init__(
        self,
        policy: RolloutEngine,
        lagged: list[RolloutEngine] | None = None,
        *,
        lagged_fraction: float = 0.0,
        lagged_refresh_steps: int = 1,
        seed: int = 0,
    ) -> None:
        """Set up the sampler.

        Args:
            policy: The engine holding the newest weights.
            lagged: Engines refreshed only every ``lagged_refresh_steps`` optimizer steps.
            lagged_fraction: Probability that a turn goes to a (uniformly chosen) lagged engine.
            lagged_refresh_steps: K, the lagged engines' refresh interval in optimizer steps.
            seed: Seed of the per-turn draw.
        """
        if not 0.0 <= lagged_fraction <= 1.0:
            raise ValueError(f"lagged_fraction must be in [0, 1], got {lagged_fraction}.")
        if lagged_fraction > 0 and not lagged:
            raise ValueError("lagged_fraction > 0 needs at least one lagged engine.")
        if lagged_refresh_steps < 1:
            raise ValueError(f"lagged_refresh_steps must be >= 1, got {lagged_refresh_steps}.")
        self.policy = policy
        self.lagged = list(lagged or [])
        self.lagged_fraction = lagged_fraction
        self.lagged_refresh_steps = lagged_refresh_steps
        self._rng = random.Random(seed)
        self.turns = 0
        self.lagged_turns = 0

    @property
    def engines(self) -> list[RolloutEngine]:
        """Every engine, policy first."""
        return [self.policy, *self.lagged]

    def pick(self) -> RolloutEngine:
        """The engine for the next turn."""
        self.turns += 1
        if self.lagged and self._rng.random() < self.lagged_fraction:
            self.lagged_turns += 1
            return self._rng.choice(self.lagged)
        return self.policy

    def is_lagged(self, engine: RolloutEngine) -> bool:
        """Whether ``engine`` is one of the lagged engines."""
        return any(engine is lagged for lagged in self.lagged)

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Push ``version`` to the policy engine, and to the lagged engines every K versions."""
        self.policy.update_weights(state_dict, version)
        if version % self.lagged_refresh_steps == 0:
            for engine in self.lagged:
                engine.update_weights(state_dict, version)
