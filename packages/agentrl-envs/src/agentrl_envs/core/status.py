"""Episode status vocabulary, as AgentBench names the outcomes of a sample."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["SampleStatus"]


class SampleStatus(StrEnum):
    """How an episode stands or ended; the values are AgentBench's ``SampleStatus`` strings."""

    RUNNING = "running"
    COMPLETED = "completed"
    AGENT_CONTEXT_LIMIT = "agent context limit"
    AGENT_VALIDATION_FAILED = "agent validation failed"
    AGENT_INVALID_ACTION = "agent invalid action"
    TASK_LIMIT_REACHED = "task limit reached"
    TASK_ERROR = "task error"
    CANCELLED = "cancelled"

    @property
    def is_terminal(self) -> bool:
        """Whether no further step can follow."""
        return self is not SampleStatus.RUNNING
