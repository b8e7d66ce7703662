"""The exception tree of agentrl-envs.

Bad model output is never an exception: it becomes an observation. These errors are for the caller's
mistakes (bad configuration, missing data) and for infrastructure faults::

    AgentRLError
    ├── EnvError                 misuse of an environment (bad option, step before reset)
    │   └── UnknownTaskError     a task or env id that is not registered
    ├── DataError                the data root or a data file is missing or malformed
    │   └── DataIntegrityError   a fetched upstream file is not the pinned commit's (corrupt or another version)
    └── InfraError               the environment's own machinery failed (database, sandbox, network)
        └── BackendUnavailableError  a backend's system dependency is missing
"""

from __future__ import annotations

__all__ = [
    "AgentRLError",
    "BackendUnavailableError",
    "DataError",
    "DataIntegrityError",
    "EnvError",
    "InfraError",
    "UnknownTaskError",
]


class AgentRLError(Exception):
    """Root of every error raised on purpose by AgentRL packages."""


class EnvError(AgentRLError, ValueError):
    """An environment was used or configured wrongly by the caller."""


class UnknownTaskError(EnvError, KeyError):
    """A task short name, upstream task name or env id is not known."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DataError(AgentRLError):
    """The benchmark data root, or a file in it, is missing or malformed."""


class DataIntegrityError(DataError):
    """An upstream file does not match the pinned commit's git blob id."""


class InfraError(AgentRLError, RuntimeError):
    """The environment's infrastructure failed; the episode ends as ``task error`` with ``infra_error=True``."""


class BackendUnavailableError(InfraError):
    """A backend needs a system component or extra that is not installed."""
