"""``RemoteEnv``: the Gymnasium env of a task whose episodes run behind a controller, over HTTP.

It speaks the AgentRL controller API (``start_sample``/``interact``/``cancel`` with the ``session_id``
header) with pooled httpx connections. Only transient faults are retried: a connection that could not be
opened and a full admission queue (429); a request that may have reached the env (an ``interact`` cut off
mid-way) is never sent twice. The controller's 4xx answers become :class:`EnvError` with its message;
an unreachable controller becomes :class:`InfraError`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import gymnasium as gym
import httpx

from agentrl_envs.core.errors import EnvError, InfraError, UnknownTaskError
from agentrl_envs.core.messages import Message, parse_action
from agentrl_envs.core.registry import resolve_task
from agentrl_envs.core.spaces import ActionSpace, MessagesSpace
from agentrl_envs.core.status import TERMINATED_STATUSES, SampleStatus
from agentrl_envs.wire import Observation, StartSampleRequest, interact_request, start_sample_request

__all__ = ["RemoteEnv"]

_RETRY_STATUS = {429}


class RemoteEnv(gym.Env[list[Message], Any]):
    """One task's episodes on a controller; same observations, actions and ``info`` as the local env."""

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}  # an instance variable, as Gymnasium's Env declares it

    def __init__(
        self,
        task: str,
        *,
        controller_url: str,
        split: str = "test",
        mode: str = "fc",
        token: str | None = None,
        retries: int = 5,
        backoff_s: float = 0.2,
        connect_timeout_s: float = 5.0,
        read_timeout_s: float | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        render_mode: str | None = None,
        data_root: str | None = None,
        **task_options: Any,
    ) -> None:
        """Connect to a controller (no request is made until :meth:`reset`).

        Args:
            task: A task's short name, env id or upstream name (``db``, ``AgentBench/DB-v0``, ``dbbench-dev``),
                or any other name the controller serves (sent as is).
            controller_url: The controller API's base URL, including ``/api``.
            split: ``test``, ``dev`` or ``train``; an upstream name in ``task`` wins.
            mode: Only ``fc``: the controller serves function-calling envs.
            token: Bearer token, for a controller bound to a non-loopback address.
            retries: Attempts for transient faults (connection refused, 429 overload).
            backoff_s: First backoff; it doubles per attempt.
            connect_timeout_s: Connect timeout.
            read_timeout_s: Read timeout; ``None`` waits as long as the env takes (as upstream's client).
            transport: An httpx transport (tests use ``httpx.ASGITransport``/``MockTransport``).
            async_transport: The async twin of ``transport``.
            render_mode: ``None`` or ``"ansi"``.
            data_root: Ignored (the controller reads its own data); accepted so local and remote calls match.
            **task_options: Not supported remotely: the controller's config sets task options.
        """
        if task_options:
            raise EnvError(
                f"Task options {sorted(task_options)} cannot be set through a controller; configure them in the "
                "controller's task config instead."
            )
        if mode != "fc":
            raise EnvError(f"mode={mode!r} is not available through a controller; it serves 'fc' envs.")
        if render_mode not in (None, "ansi"):
            raise EnvError(f"Unknown render_mode {render_mode!r}; only 'ansi' is supported.")
        try:
            spec, implied_split = resolve_task(task)
        except UnknownTaskError:  # a task only the controller knows (a custom or remote worker's task)
            self.task, self.split, self.name = task, split, task
        else:
            self.task = spec.short_name
            self.split = implied_split or split
            self.name = spec.upstream_name(self.split)
        self.render_mode = render_mode
        self.retries = max(1, retries)
        self.backoff_s = backoff_s
        base = controller_url.rstrip("/") + "/"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
        self._client = httpx.Client(base_url=base, headers=headers, timeout=timeout, transport=transport)
        self._aclient = httpx.AsyncClient(base_url=base, headers=headers, timeout=timeout, transport=async_transport)
        self.observation_space = MessagesSpace()
        self.action_space = ActionSpace([])
        self.tools: list[dict[str, Any]] = []
        self.messages: list[Message] = []
        self.session_id: int | None = None
        self._index: int | str | None = None
        self._status = SampleStatus.RUNNING.value
        self._indices: list[int | str] | None = None

    # ----------------------------------------------------------------- Gymnasium API

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode on the controller (cancelling the one in progress, if any)."""
        super().reset(seed=seed)
        self._cancel_open()
        if (options or {}).get("index") is None and self._indices is None:
            self._indices = self._call(lambda: self._client.get("get_indices", params={"name": self.name}))[0]
        body = self._start_body(options)
        data, headers = self._call(lambda: self._client.post("start_sample", json=body))
        return self._started(Observation.parse(data), headers, body["index"])

    def step(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Send one assistant message; returns ``(messages, reward, terminated, truncated, info)``."""
        message, headers = self._step_request(action)
        body = interact_request([message])
        data, _ = self._call(lambda: self._client.post("interact", json=body, headers=headers), idempotent=False)
        return self._stepped(Observation.parse(data))

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """Async twin of :meth:`reset` (a real coroutine: no thread)."""
        super().reset(seed=seed)
        await self._acancel_open()
        if (options or {}).get("index") is None and self._indices is None:
            self._indices = (await self._acall(lambda: self._aclient.get("get_indices", params={"name": self.name})))[0]
        body = self._start_body(options)
        data, headers = await self._acall(lambda: self._aclient.post("start_sample", json=body))
        return self._started(Observation.parse(data), headers, body["index"])

    async def astep(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Async twin of :meth:`step`."""
        message, headers = self._step_request(action)
        body = interact_request([message])
        data, _ = await self._acall(
            lambda: self._aclient.post("interact", json=body, headers=headers), idempotent=False
        )
        return self._stepped(Observation.parse(data))

    def num_samples(self) -> int:
        """How many samples the controller lists for this task (indices ``0..n-1`` for AgentBench tasks)."""
        indices = self._indices
        if indices is None:
            indices = self._call(lambda: self._client.get("get_indices", params={"name": self.name}))[0]
            self._indices = indices
        return len(indices)

    def close(self) -> None:
        """Cancel an open episode and close the connections."""
        try:
            self._cancel_open()
        finally:
            self._client.close()
            super().close()

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        try:
            await self._acancel_open()
        finally:
            await self._aclient.aclose()
            self._client.close()

    def render(self) -> str | None:
        """The transcript so far as text, in ``ansi`` render mode."""
        if self.render_mode != "ansi":
            return None
        return "\n".join(f"[{m.get('role')}] {m.get('content') or ''}" for m in self.messages)

    # ----------------------------------------------------------------- request/answer shaping

    def _start_body(self, options: dict[str, Any] | None) -> StartSampleRequest:
        index = (options or {}).get("index")
        if index is None:
            if not self._indices:
                raise EnvError(f"The controller lists no samples for {self.name!r}.")
            index = self._indices[int(self.np_random.integers(0, len(self._indices)))]
        elif isinstance(index, bool) or not isinstance(index, int | str):
            raise EnvError(f"options['index'] must be an int, got {type(index).__name__}.")
        return start_sample_request(self.name, index)

    def _started(
        self, data: Observation, headers: httpx.Headers, index: int | str
    ) -> tuple[list[Message], dict[str, Any]]:
        try:
            self.session_id = int(headers["session_id"])
        except (KeyError, ValueError) as e:
            raise InfraError(f"The controller's start_sample answer has no valid session_id header: {e}") from e
        self._index = index
        self.tools = list(data.tools or [])
        self.action_space = ActionSpace(self.tools)
        messages = list(data.messages)
        self.messages = list(messages)
        self._status = data.status
        if data.finish:
            self.session_id = None
            if self._status == SampleStatus.TASK_ERROR.value:
                raise InfraError(f"{self.name}: sample {index} could not start: {data.metrics}")
        return messages, self._info(data)

    def _step_request(self, action: Any) -> tuple[Message, dict[str, str]]:
        if self.session_id is None:
            if self._index is None:
                raise gym.error.ResetNeeded("Call reset() before step().")
            raise EnvError(f"The episode has ended with status {self._status!r}; call reset() to start another.")
        message = parse_action(action).to_dict()
        self.messages.append(message)
        return message, {"session_id": str(self.session_id)}

    def _stepped(self, data: Observation) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        messages = list(data.messages)
        self.messages.extend(messages)
        if data.tools:
            self.tools = list(data.tools)
        self._status = data.status
        finished = data.finish
        if finished:
            self.session_id = None
        terminated = finished and self._status in TERMINATED_STATUSES
        return messages, data.reward, terminated, finished and not terminated, self._info(data)

    def _info(self, data: Observation) -> dict[str, Any]:
        metrics = data.metrics
        infra_error = bool(metrics.get("infra_error", self._status == SampleStatus.TASK_ERROR.value))
        score = metrics.get("score", data.reward)
        info: dict[str, Any] = {
            "task": self.task,
            "split": self.split,
            "index": self._index,
            "tools": self.tools,
            "fidelity": metrics.get("fidelity", "upstream"),
            "status": self._status,
            "score": float(score or 0.0),
            "infra_error": infra_error,
            "session_id": self.session_id if self.session_id is not None else data.session_id,
        }
        info.update({k: v for k, v in metrics.items() if k not in info})
        return info

    # ----------------------------------------------------------------- transport

    def _cancel_open(self) -> None:
        if self.session_id is None:
            return
        sid, self.session_id = self.session_id, None
        try:
            self._client.post("cancel", headers={"session_id": str(sid)})
        except httpx.HTTPError:
            pass  # the controller frees idle sessions itself (TTL)

    async def _acancel_open(self) -> None:
        if self.session_id is None:
            return
        sid, self.session_id = self.session_id, None
        try:
            await self._aclient.post("cancel", headers={"session_id": str(sid)})
        except httpx.HTTPError:
            pass

    def _call(self, send: Callable[[], httpx.Response], *, idempotent: bool = True) -> tuple[Any, httpx.Headers]:
        for attempt in range(self.retries):
            try:
                response = send()
            except httpx.HTTPError as e:
                if not self._transient(e, idempotent) or attempt + 1 == self.retries:
                    raise self._unreachable(e) from e
            else:
                if response.status_code not in _RETRY_STATUS or attempt + 1 == self.retries:
                    return self._decode(response)
            time.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _acall(
        self, send: Callable[[], Awaitable[httpx.Response]], *, idempotent: bool = True
    ) -> tuple[Any, httpx.Headers]:
        for attempt in range(self.retries):
            try:
                response = await send()
            except httpx.HTTPError as e:
                if not self._transient(e, idempotent) or attempt + 1 == self.retries:
                    raise self._unreachable(e) from e
            else:
                if response.status_code not in _RETRY_STATUS or attempt + 1 == self.retries:
                    return self._decode(response)
            await asyncio.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")

    @staticmethod
    def _transient(error: httpx.HTTPError, idempotent: bool) -> bool:
        """A connection that never opened is safe to retry; anything after sending only if idempotent."""
        if isinstance(error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
            return True
        return idempotent and isinstance(error, httpx.TransportError)

    def _unreachable(self, error: httpx.HTTPError) -> InfraError:
        return InfraError(
            f"Controller at {self._client.base_url} failed: {type(error).__name__}: {error}.{self._url_hint()}"
        )

    def _url_hint(self) -> str:
        """A " Did you mean .../api?" when the controller URL lacks the ``/api`` its routes live under."""
        url = self._client.base_url
        if url.path.rstrip("/").endswith("/api"):
            return ""
        return f" Did you mean --controller {str(url.copy_with(path=url.path.rstrip('/') + '/api'))}?"

    def _decode(self, response: httpx.Response) -> tuple[Any, httpx.Headers]:
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 400:
            body = cast(dict[str, Any], data) if isinstance(data, dict) else None
            detail = body.get("error") or body.get("detail") if body is not None else response.text[:500]
            error = EnvError if response.status_code < 500 else InfraError
            hint = self._url_hint() if response.status_code == 404 else ""
            raise error(f"Controller answered {response.status_code} to {response.request.url.path}: {detail}.{hint}")
        if data is None:
            raise InfraError(f"Controller sent a non-JSON answer to {response.request.url.path}.")
        return data, response.headers
