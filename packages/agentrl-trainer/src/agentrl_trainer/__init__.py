"""AgentRLTrainer: TRL GRPO with asynchronous multi-turn rollouts, cross-policy sampling and task normalization.

The trainer and its config are imported on first use, so that an engine process (which imports
``agentrl_trainer.rollout``) does not pay for TRL, datasets and the trainer at start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from agentrl_trainer.types import Generation, Group, TokenSegment, TrainingRow, Trajectory

if TYPE_CHECKING:
    from agentrl_trainer.config import AgentRLConfig
    from agentrl_trainer.trainer import AgentRLTrainer

__version__ = "0.1.0"

__all__ = [
    "AgentRLConfig",
    "AgentRLTrainer",
    "Generation",
    "Group",
    "TokenSegment",
    "TrainingRow",
    "Trajectory",
    "__version__",
]

_LAZY = {"AgentRLConfig": "agentrl_trainer.config", "AgentRLTrainer": "agentrl_trainer.trainer"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentrl_trainer' has no attribute {name!r}")
