"""Episode status vocabulary, as AgentBench names the outcomes of a sample."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["LIMIT_STATUSES", "TERMINATED_STATUSES", "SampleStatus"]


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

    @property
    def is_terminated(self) -> bool:
        """Whether an episode that ends so is ``terminated`` in Gymnasium's sense (the agent ended it).

        The other terminal statuses (a limit, a task error, a cancel) end it ``truncated``.
        """
        return self in TERMINATED_STATUSES


TERMINATED_STATUSES: frozenset[SampleStatus] = frozenset(
    {SampleStatus.COMPLETED, SampleStatus.AGENT_INVALID_ACTION, SampleStatus.AGENT_VALIDATION_FAILED}
)
"""The statuses that end an episode ``terminated``: the agent finished, or failed in a way it could not undo."""

LIMIT_STATUSES: frozenset[SampleStatus] = frozenset({SampleStatus.TASK_LIMIT_REACHED, SampleStatus.AGENT_CONTEXT_LIMIT})
"""The statuses of an episode cut short by a turn or context limit (the agent had not finished)."""
