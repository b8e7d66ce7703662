"""The AgentRL controller protocol's JSON shapes, built and parsed in one place.

Three parties speak it: the env worker (``agentrl_controller.workers.local``, or upstream's ``agentrl-worker``),
the controller between worker and client, and the client (:class:`~agentrl_envs.client.remote.RemoteEnv`, or
upstream's ``agentrl-eval``). Each of them builds its bodies and reads the others' with this module, so a field
is named, ordered and defaulted once. See ``AGENTRL_PROTOCOL.md`` for the protocol itself.

The one shape with two spellings is the observation: a worker sends it as ``env_out`` with its metrics under
``metric`` (singular, as ``agentrl-worker`` does), the controller answers clients with the flat observation, its
metrics under ``metrics`` and the ``session_id`` first (as ``agentrl-eval`` reads it). :class:`Observation` holds
either and writes either.

Every ``interact`` passes through here twice (worker and controller), so the shapes are a slotted dataclass and
TypedDicts, not validated models: parsing is lenient, as the controller always was with workers (a missing or
malformed field takes its default), and the requests the controller validates are checked by its HTTP layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict

from agentrl_envs.core.messages import Message
from agentrl_envs.core.status import SampleStatus

__all__ = [
    "NO_RESULT",
    "CancelBody",
    "InteractRequest",
    "Observation",
    "StartSampleRequest",
    "WorkerInteractAnswer",
    "WorkerInteractRequest",
    "WorkerStartSampleRequest",
    "cancel_body",
    "env_out",
    "interact_request",
    "start_sample_request",
    "worker_interact_answer",
    "worker_interact_request",
    "worker_start_sample_request",
]

_RUNNING: Final = SampleStatus.RUNNING.value


class _NoResult:
    """The type of :data:`NO_RESULT`."""

    def __repr__(self) -> str:
        return "NO_RESULT"


NO_RESULT: Final = _NoResult()
"""An observation without a ``result`` key (``null`` is a result; upstream's worker never sends the key)."""


@dataclass(slots=True)
class Observation:
    """What the env says after ``start_sample`` or ``interact``: its new messages and how the episode stands.

    Build one and write it with :meth:`worker_payload` (a worker's ``env_out``) or :meth:`client_payload` (the
    controller's answer); read either with :meth:`parse`.
    """

    messages: list[Message] = field(default_factory=list)
    """The env's new messages (incremental, not the transcript)."""
    tools: list[dict[str, Any]] | None = None
    """OpenAI tool schemas; ``None`` (absent on the wire) means "keep the previous tools"."""
    status: str = _RUNNING
    """A :class:`~agentrl_envs.core.status.SampleStatus` value."""
    finish: bool = False
    """The episode has ended; a running observation must carry messages (``agentrl-eval`` rejects it otherwise)."""
    reward: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)
    """``score``, ``infra_error`` and whatever else the env reports."""
    result: Any = NO_RESULT
    """The task's result, if sent at all (:data:`NO_RESULT` when not)."""
    session_id: int | None = None
    """Set in the controller's answers; workers leave it to the envelope."""

    @classmethod
    def parse(cls, data: Mapping[str, Any]) -> Observation:
        """Read an observation as a worker or a controller sends it; a missing or malformed field takes its default.

        ``metrics`` wins over the worker's ``metric``; an absent ``finish`` follows the status (any status but
        ``running`` ends the episode); a reward that is not a number counts as ``0.0``.
        """
        metrics = data.get("metrics")
        if not isinstance(metrics, dict):
            metric = data.get("metric")
            metrics = metric if isinstance(metric, dict) else {}
        status = str(data.get("status") or _RUNNING)
        reward = data.get("reward")
        return cls(  # positional: this runs twice per interact, and keywords cost a third more
            data.get("messages") or [],
            data.get("tools"),
            status,
            bool(data.get("finish", status != _RUNNING)),
            reward if type(reward) is float else _as_float(reward),
            metrics,
            data.get("result", NO_RESULT),
            data.get("session_id"),
        )

    def worker_payload(self) -> dict[str, Any]:
        """The worker's ``env_out`` (also its ``start_sample`` answer): metrics under ``metric``, no session id."""
        return {
            "messages": self.messages,
            "tools": self.tools,
            "status": self.status,
            "finish": self.finish,
            "reward": self.reward,
            "metric": self.metrics,
        }

    def client_payload(self, session_id: int) -> dict[str, Any]:
        """The controller's flat answer to ``start_sample`` and ``interact``, as ``agentrl-eval`` reads it."""
        payload = {
            "session_id": session_id,
            "messages": self.messages,
            "tools": self.tools,
            "status": self.status,
            "finish": self.finish,
            "reward": self.reward,
            "metrics": self.metrics,
        }
        if self.result is not NO_RESULT:
            payload["result"] = self.result
        return payload


class StartSampleRequest(TypedDict):
    """Client -> controller ``POST start_sample`` (``index: -1`` with ``custom_task`` for a custom task)."""

    name: str
    index: int | str
    custom_task: dict[str, Any] | None


class InteractRequest(TypedDict):
    """Client -> controller ``POST interact``; the session is named by the ``session_id`` header."""

    messages: list[Message]


class CancelBody(TypedDict):
    """Controller -> worker ``POST cancel``, and the worker's answer (clients name the session in a header)."""

    session_id: int


class WorkerStartSampleRequest(TypedDict):
    """Controller -> worker ``POST start_sample``: the controller allocates the session id."""

    index: int | str
    custom_task: dict[str, Any] | None
    session_id: int


class WorkerInteractRequest(TypedDict):
    """Controller -> worker ``POST interact``."""

    session_id: int
    messages: list[Message]


class WorkerInteractAnswer(TypedDict):
    """Worker -> controller answer to ``interact``: the observation nested under ``env_out``."""

    session_id: int
    env_out: dict[str, Any]


def start_sample_request(name: str, index: int | str, custom_task: dict[str, Any] | None = None) -> StartSampleRequest:
    """The body of a client's ``start_sample``."""
    return {"name": name, "index": index, "custom_task": custom_task}


def interact_request(messages: list[Message]) -> InteractRequest:
    """The body of a client's ``interact``."""
    return {"messages": messages}


def cancel_body(session_id: int) -> CancelBody:
    """The body of the controller's ``cancel`` to a worker (and of a worker's answer to it)."""
    return {"session_id": session_id}


def worker_start_sample_request(
    session_id: int, index: int | str, custom_task: dict[str, Any] | None
) -> WorkerStartSampleRequest:
    """The body of the controller's ``start_sample`` to a worker."""
    return {"index": index, "custom_task": custom_task, "session_id": session_id}


def worker_interact_request(session_id: int, messages: list[Message]) -> WorkerInteractRequest:
    """The body of the controller's ``interact`` to a worker."""
    return {"session_id": session_id, "messages": messages}


def worker_interact_answer(session_id: int, env_out: dict[str, Any]) -> WorkerInteractAnswer:
    """A worker's answer to ``interact``, around the :meth:`Observation.worker_payload` of its step."""
    return {"session_id": session_id, "env_out": env_out}


def env_out(answer: Any) -> dict[str, Any] | None:
    """The observation a worker nested in its ``interact`` answer, or ``None`` if the answer has none."""
    out = answer.get("env_out") if isinstance(answer, dict) else None
    return out if isinstance(out, dict) else None


def _as_float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0
