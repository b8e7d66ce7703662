"""Why an agent stopped an episode, or the whole evaluation, before the environment ended it.

An agent raises :class:`AgentStop` when it cannot produce the next action; the runner ends that episode with
the error's AgentBench status and records the message. :class:`AgentConfigError` is different: the agent can
never work as configured (bad URL, key or model), so the evaluation stops::

    AgentRLError
    ├── AgentStop                   ends one episode with ``status``
    │   ├── AgentContextLimitError      ``agent context limit``: the prompt no longer fits the model
    │   ├── AgentValidationError        ``agent validation failed``: the model's replies were unusable
    │   └── AgentUnavailableError       ``cancelled``: the model endpoint stayed unreachable
    └── AgentConfigError            stops the evaluation: fix the flags and run again
"""

from __future__ import annotations

from agentrl_envs.core.errors import AgentRLError
from agentrl_envs.core.status import SampleStatus

__all__ = [
    "AgentConfigError",
    "AgentContextLimitError",
    "AgentStop",
    "AgentUnavailableError",
    "AgentValidationError",
]


class AgentStop(AgentRLError):
    """The agent ends the current episode; ``status`` is the AgentBench status it ends with."""

    status: SampleStatus = SampleStatus.CANCELLED


class AgentContextLimitError(AgentStop):
    """The conversation no longer fits the model's context window."""

    status = SampleStatus.AGENT_CONTEXT_LIMIT


class AgentValidationError(AgentStop):
    """The model's replies could not be used (not JSON, no ``choices[0].message``, rejected request)."""

    status = SampleStatus.AGENT_VALIDATION_FAILED


class AgentUnavailableError(AgentStop):
    """The model endpoint kept failing (transport errors, 429 or 5xx) after every retry."""

    status = SampleStatus.CANCELLED


class AgentConfigError(AgentRLError):
    """The agent cannot work as configured (e.g. 401/404 from the endpoint); the evaluation stops."""
