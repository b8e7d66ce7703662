"""The exception tree of agentrl-controller.

Every error a client can cause maps to a 4xx JSON answer; the status code lives on the class::

    ControllerError
    ├── ConfigError             the controller's configuration is invalid (raised at start-up)
    └── ApiError                an answer to a bad request (carries ``status_code``)
        ├── BadRequestError         400: a payload or header that cannot be used
        ├── UnauthorizedError       401: a missing or wrong bearer token
        ├── NotFoundError           404: an unknown task, session or route
        ├── SessionStateError       409: the session cannot do that now (busy, finished, cancelled)
        ├── PayloadTooLargeError    413: a body over the configured limit
        ├── TaskUnavailableError    424: the task's workers cannot be started (the message says why)
        └── OverloadedError         429: the admission queue is full or timed out
"""

from __future__ import annotations

from agentrl_envs.core.errors import AgentRLError

__all__ = [
    "ApiError",
    "BadRequestError",
    "ConfigError",
    "ControllerError",
    "NotFoundError",
    "OverloadedError",
    "PayloadTooLargeError",
    "SessionStateError",
    "TaskUnavailableError",
    "UnauthorizedError",
    "WorkerError",
]


class ControllerError(AgentRLError):
    """Root of the controller's errors."""


class ConfigError(ControllerError, ValueError):
    """The controller configuration is invalid."""


class WorkerError(ControllerError):
    """A worker could not be reached or answered with an error (an infrastructure fault, not the client's)."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        """Record the worker's HTTP status, if it answered at all."""
        super().__init__(message)
        self.status_code = status_code


class ApiError(ControllerError):
    """An error answered to the client as JSON with ``status_code``."""

    status_code = 400

    def __init__(self, message: str) -> None:
        """Keep the message that the JSON answer carries."""
        super().__init__(message)
        self.message = message


class BadRequestError(ApiError):
    """A payload or header that cannot be used."""

    status_code = 400


class UnauthorizedError(ApiError):
    """A missing or wrong bearer token."""

    status_code = 401


class NotFoundError(ApiError):
    """An unknown task, session or route."""

    status_code = 404


class SessionStateError(ApiError):
    """The session exists (or existed) but cannot do that now."""

    status_code = 409


class PayloadTooLargeError(ApiError):
    """A request body over the configured limit."""

    status_code = 413


class OverloadedError(ApiError):
    """The admission queue is full, or a request waited in it longer than its timeout."""

    status_code = 429


class TaskUnavailableError(ApiError):
    """The task is configured but its workers cannot be started; 424 (a failed dependency), never a 5xx."""

    status_code = 424
