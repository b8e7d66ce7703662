"""AgentRLTrainer: TRL GRPO with asynchronous multi-turn rollouts, cross-policy sampling and task normalization."""

from agentrl_trainer.config import AgentRLConfig
from agentrl_trainer.trainer import AgentRLTrainer
from agentrl_trainer.types import Generation, Group, TokenSegment, TrainingRow, Trajectory

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
