"""The staleness rule: how far behind the trainer a group may be, enforced where groups start and where they train.

A group's staleness at trainer version ``v`` is ``v`` minus the oldest policy version of its current-policy turns
(:meth:`~agentrl_trainer.types.Group.staleness`; lagged-engine turns lag by design and do not count). With
``max_staleness`` S the rule acts twice:

* **admission** (the rollout producer, async mode): with policy ``drop``, a new group starts only while fewer
  than ``(S + 1) * B`` groups are live (started and not yet taken by the trainer, net of dropped ones), ``B``
  being the groups the trainer takes per version at least (AReaL's rule, counted by the groups actually taken;
  see :mod:`agentrl_trainer.rollout.producer`). With ``downweight`` a stale group still trains, so nothing waits;
* **filter** (the trainer, each step): a group more than S versions old is dropped, or with ``downweight`` kept
  with its advantages scaled by ``weight_decay ** (staleness - S)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast, get_args

if TYPE_CHECKING:
    from agentrl_trainer.config import AgentRLConfig
    from agentrl_trainer.types import Group

__all__ = ["StalePolicy", "StalenessRule", "Verdict"]

StalePolicy = Literal["drop", "downweight"]
"""What happens to a group older than ``max_staleness``: it is dropped, or it trains with a smaller weight."""

Verdict = Literal["keep", "downweight", "drop"]
"""The filter's answer for one group."""


@dataclass(frozen=True)
class StalenessRule:
    """``max_staleness`` and what to do past it (the module docstring has the rule)."""

    max_staleness: int
    policy: StalePolicy = "drop"
    weight_decay: float = 0.5
    """``downweight``: a group ``k`` versions past the bound trains with weight ``weight_decay ** k``."""

    def __post_init__(self) -> None:
        if self.max_staleness < 0:
            raise ValueError(f"max_staleness must be >= 0, got {self.max_staleness}.")
        if self.policy not in get_args(StalePolicy):
            raise ValueError(f"stale_policy must be one of {get_args(StalePolicy)}, got {self.policy!r}.")

    @classmethod
    def from_config(cls, args: AgentRLConfig) -> StalenessRule:
        """The rule ``max_staleness``, ``stale_policy`` and ``stale_weight_decay`` of ``args`` set."""
        return cls(args.max_staleness, cast(StalePolicy, args.stale_policy), args.stale_weight_decay)

    def admits(self, live_groups: int, groups_per_version: int) -> bool:
        """Whether a new group may start while ``live_groups`` are started and not yet taken by the trainer.

        ``groups_per_version`` is the fewest groups the trainer takes per optimizer step.
        """
        return self.policy != "drop" or live_groups < (self.max_staleness + 1) * groups_per_version

    def verdict(self, staleness: int) -> Verdict:
        """What the trainer does with a group ``staleness`` versions old."""
        if staleness <= self.max_staleness:
            return "keep"
        return "downweight" if self.policy == "downweight" else "drop"

    def weight(self, staleness: int) -> float:
        """The weight of a group ``staleness`` versions old that trains (1 within the bound)."""
        return self.weight_decay ** max(staleness - self.max_staleness, 0)

    def filter(self, groups: list[Group], version: int) -> tuple[list[Group], list[Group]]:
        """Split ``groups`` at trainer version ``version`` into (kept, dropped); down-weighted ones get their weight.

        A kept group within the bound keeps the weight it has.
        """
        kept: list[Group] = []
        dropped: list[Group] = []
        for group in groups:
            staleness = group.staleness(version)
            verdict = self.verdict(staleness)
            if verdict == "drop":
                dropped.append(group)
                continue
            if verdict == "downweight":
                group.weight = self.weight(staleness)
            kept.append(group)
        return kept, dropped
