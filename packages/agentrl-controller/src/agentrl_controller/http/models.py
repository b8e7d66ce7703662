"""Pydantic models of the AgentRL controller API, as upstream's ``agentrl-eval`` and ``agentrl-worker`` use it.

They validate the requests that take the framework's route (the hot ``interact`` takes the fast path) and
describe every route in the OpenAPI schema; the JSON shapes are built and read with :mod:`agentrl_envs.wire`,
and ``tests/agentrl_controller/test_wire_models.py`` keeps the two in step. Requests we own forbid unknown
keys; OpenAI messages pass through untouched (``extra="allow"``), because dropping a field such as
``tool_calls`` would break tool tasks. See ``AGENTRL_PROTOCOL.md``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CancelNotice",
    "CancelResponse",
    "ErrorResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "Health",
    "InteractRequest",
    "Observation",
    "SessionInfo",
    "StartSampleRequest",
    "WorkerInfo",
    "WorkerInteractRequest",
    "WorkerStartSampleRequest",
]

TaskIndex = int | str
"""A sample index; upstream allows strings, and ``-1`` means a custom task."""

_MAX_NAME = 200


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StartSampleRequest(_Strict):
    """``POST /api/start_sample``."""

    name: str = Field(min_length=1, max_length=_MAX_NAME)
    index: TaskIndex
    custom_task: dict[str, Any] | None = None


class InteractRequest(_Strict):
    """``POST /api/interact`` (the session is named by the ``session_id`` header)."""

    messages: list[dict[str, Any]] = Field(min_length=1)


class Observation(BaseModel):
    """The flat observation a client gets from ``start_sample`` and ``interact``.

    ``messages`` are the env's new messages; ``metrics`` carries ``score`` and ``infra_error``. The schema of
    :meth:`agentrl_envs.wire.Observation.client_payload`, which builds the answers.
    """

    model_config = ConfigDict(extra="allow")

    session_id: int
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] | None = None
    status: str = "running"
    finish: bool = False
    reward: float = 0.0
    metrics: dict[str, Any] = Field(default_factory=dict)
    result: Any = None


class CancelResponse(_Strict):
    """Answer to ``POST /api/cancel``."""

    session_id: int
    status: str


class HeartbeatRequest(BaseModel):
    """``POST /api/receive_heartbeat``: a worker announces itself (unknown keys tolerated for newer workers)."""

    name: str = Field(min_length=1, max_length=_MAX_NAME)
    address: str = Field(min_length=1, max_length=2048)
    concurrency: int = Field(ge=1, le=1_000_000)
    indices: list[TaskIndex] = Field(default_factory=list, max_length=10_000_000)


class HeartbeatResponse(_Strict):
    """Answer to a heartbeat (the worker only needs JSON)."""

    worker_id: str
    status: str = "ok"


class CancelNotice(BaseModel):
    """``POST /api/cancel_notice``: a worker reports that a cancelled session has stopped."""

    session_id: int


class WorkerStartSampleRequest(_Strict):
    """Controller → worker ``start_sample``: the controller allocates the session id."""

    index: TaskIndex
    custom_task: dict[str, Any] | None = None
    session_id: int


class WorkerInteractRequest(_Strict):
    """Controller → worker ``interact``."""

    session_id: int
    messages: list[dict[str, Any]]


class SessionInfo(_Strict):
    """One row of ``GET /api/list_sessions``."""

    session_id: int
    task: str
    index: TaskIndex
    worker_id: str
    status: str
    created_s: float
    idle_s: float
    turns: int


class WorkerInfo(_Strict):
    """One row of ``GET /api/list_workers``."""

    worker_id: str
    task: str
    address: str
    kind: str
    """``local`` (a process this controller supervises) or ``remote`` (registered by heartbeat)."""
    concurrency: int
    active: int
    healthy: bool
    pid: int | None = None
    restarts: int = 0
    last_seen_s: float


class Health(_Strict):
    """``GET /healthz``."""

    status: str
    sessions: int
    workers: int
    queued: int


class ErrorResponse(_Strict):
    """Every 4xx answer."""

    error: str
    detail: Any = None
