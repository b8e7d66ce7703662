"""AgentRL trainer: GRPO with asynchronous multi-turn rollouts over AgentBench environments."""

__version__ = "0.1.0"

__all__ = ["__version__"]
