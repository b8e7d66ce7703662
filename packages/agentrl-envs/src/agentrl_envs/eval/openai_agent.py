"""An agent backed by any OpenAI-compatible ``POST {base_url}/chat/completions`` endpoint (vLLM, SGLang, OpenAI).

One :class:`OpenAIChatClient` holds the pooled HTTP connections and is shared by every :class:`OpenAIAgent`
of an evaluation. Failures are sorted the way AgentBench's HTTP agent sorts them:

- transport errors, 408/409/429 and 5xx are retried with bounded exponential backoff and jitter, honouring
  ``Retry-After``; if they persist the episode ends as ``cancelled`` (the endpoint, not the model, failed);
- a 200 reply that is not JSON or has no ``choices[0].message`` is retried the same way and, if it persists,
  ends the episode as ``agent validation failed``;
- a 400/413 whose error says the prompt is too long ends the episode as ``agent context limit``; any other
  400/422 as ``agent validation failed``;
- 401, 403 and 404 stop the evaluation: the key, URL or model name is wrong.

:meth:`OpenAIChatClient.check` asks the endpoint once before an evaluation (``GET /models``, else a one-token
completion), so an unreachable or failing server stops the run at once with the reason, not with every
episode ``cancelled``. One client serves several models: the model is a field of each request.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from agentrl_envs.core.messages import Message
from agentrl_envs.eval.agents import AgentTurn
from agentrl_envs.eval.errors import (
    AgentConfigError,
    AgentContextLimitError,
    AgentStop,
    AgentUnavailableError,
    AgentValidationError,
)

__all__ = ["OpenAIAgent", "OpenAIChatClient", "RetryPolicy", "base_url_hint", "is_context_limit"]

logger = logging.getLogger(__name__)

_RETRYABLE = {408, 409, 429}
_FATAL = {401: "check --api-key", 403: "check --api-key", 404: "check --base-url and --model"}
# AgentBench's HTTP agent calls an error a context-limit error when it names the prompt/context/tokens and
# says they are too many; ``context_length_exceeded`` is OpenAI's error code for the same thing.
_CONTEXT_NOUNS = ("prompt", "context", "tokens")
_CONTEXT_VERBS = ("limit", "exceed", "max", "long", "much", "many", "reach", "over", "up", "beyond")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How failed requests are retried: bounded exponential backoff with jitter."""

    max_retries: int = 5
    """Retries after the first attempt."""
    backoff_s: float = 1.0
    """Delay before the first retry; doubles after each."""
    max_backoff_s: float = 30.0
    """Upper bound of one computed delay."""
    max_retry_after_s: float = 120.0
    """Upper bound on a server's ``Retry-After``."""

    def delay_s(self, attempt: int, retry_after_s: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after_s is not None:
            return min(max(retry_after_s, 0.0), self.max_retry_after_s)
        ceiling = min(self.max_backoff_s, self.backoff_s * 2**attempt)
        return ceiling * rng.uniform(0.5, 1.0)


def is_context_limit(error_text: str) -> bool:
    """Whether an error body says the prompt does not fit the model's context (AgentBench's rule)."""
    text = error_text.lower()
    if "context_length_exceeded" in text:
        return True
    return any(noun in text for noun in _CONTEXT_NOUNS) and any(verb in text for verb in _CONTEXT_VERBS)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date); ``None`` if absent or unreadable."""
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return when.timestamp() - time.time()


class _Retryable(Exception):
    """A failed attempt worth retrying; ``failure`` is what the episode ends with if retries run out."""

    def __init__(self, failure: AgentStop, retry_after_s: float | None = None) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.retry_after_s = retry_after_s


class OpenAIChatClient:
    """Pooled, retrying client of one model behind an OpenAI-compatible chat-completions endpoint."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        sampling: dict[str, Any] | None = None,
        timeout_s: float = 300.0,
        max_connections: int = 16,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """Open the connection pool.

        Args:
            base_url: The API root, e.g. ``http://127.0.0.1:8000/v1``; requests go to ``{base_url}/chat/completions``.
            model: The ``model`` field of every request.
            api_key: Sent as ``Authorization: Bearer ...`` when given.
            sampling: Extra request fields (``temperature``, ``top_p``, ``max_tokens``, ...).
            timeout_s: Read timeout of one request.
            max_connections: Size of the connection pool (the eval's concurrency).
            retry: Retry policy; defaults to :class:`RetryPolicy()`.
            transport: An httpx transport, for tests.
        """
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model
        self.sampling = dict(sampling or {})
        self.retry = retry or RetryPolicy()
        self._rng = random.Random()
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=10.0),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            transport=transport,
        )

    async def complete(self, messages: list[Message], tools: list[dict[str, Any]]) -> Message:
        """The model's next assistant message (see :meth:`turn`)."""
        return (await self.turn(messages, tools)).message

    async def turn(
        self, messages: list[Message], tools: list[dict[str, Any]], *, model: str | None = None
    ) -> AgentTurn:
        """The next assistant message of ``model`` (default: the client's), with the tokens the server reported.

        Raises:
            AgentStop: The episode cannot go on (see the module docstring for which subclass when).
            AgentConfigError: The endpoint refuses the key, URL or model.
        """
        model = model or self.model
        body: dict[str, Any] = {"model": model, "messages": messages, **self.sampling}
        if tools:
            body["tools"] = tools
        for attempt in range(self.retry.max_retries + 1):
            try:
                return await self._attempt(body)
            except _Retryable as retryable:
                if attempt == self.retry.max_retries:
                    raise retryable.failure from None
                delay_s = self.retry.delay_s(attempt, retryable.retry_after_s, self._rng)
                logger.warning("model %s: %s; retry %d in %.1fs", model, retryable.failure, attempt + 1, delay_s)
                await asyncio.sleep(delay_s)
        raise AssertionError("unreachable")  # pragma: no cover

    async def check(self, models: list[str] | None = None) -> None:
        """Ask the endpoint once whether it is up and serves ``models`` (default: the client's model).

        ``GET {base_url}/models`` answers without spending tokens; a model it does not list (or every model, on a
        server without that route) is asked for a short completion instead, retried as any request.

        Raises:
            AgentConfigError: The endpoint is unreachable, failing, refuses the key, or does not serve a model;
                the message says which and what to check.
        """
        models = models or [self.model]
        try:
            response = await self._http.get("/models")
        except httpx.TransportError as e:
            raise AgentConfigError(
                f"Cannot reach the model endpoint {self._http.base_url}: {type(e).__name__}: {e}. Is the server "
                f"running, and is --base-url right?{base_url_hint(str(self._http.base_url))}"
            ) from e
        if response.status_code in (401, 403):
            raise AgentConfigError(self._refused(response, "check --api-key"))
        served = _model_ids(response) if response.status_code == 200 else None
        if response.status_code >= 500 and response.status_code != 501:  # 501: no GET here, ask a completion
            raise AgentConfigError(self._refused(response, "the server is failing; look at its log"))
        # A model the list names is served; one it does not name may still be (an alias some servers accept):
        # ask it for a short completion.
        for model in models if served is None else [m for m in models if m not in served]:
            try:
                await self.turn([{"role": "user", "content": "Say OK."}], [], model=model)
            except (AgentStop, AgentConfigError) as e:
                listed = f" It lists the models {served} (check --model)." if served is not None else ""
                raise AgentConfigError(
                    f"The model endpoint {self._http.base_url} fails for model {model!r}: {e}{listed}"
                ) from e

    def _refused(self, response: httpx.Response, fix: str) -> str:
        return (
            f"The model endpoint {self._http.base_url} answered HTTP {response.status_code} to "
            f"{response.request.url.path} ({fix}): {response.text[:300]}"
        )

    async def _attempt(self, body: dict[str, Any]) -> AgentTurn:
        """One request.

        Raises:
            _Retryable: For a failure worth another try.
            AgentStop: For a failure that ends the episode at once.
            AgentConfigError: For a failure that ends the evaluation.
        """
        try:
            response = await self._http.post("/chat/completions", json=body)
        except httpx.TransportError as e:
            raise _Retryable(AgentUnavailableError(f"{type(e).__name__} talking to {self._http.base_url}: {e}")) from e
        status, text = response.status_code, response.text
        if status == 200:
            try:
                message, usage = parse_reply(text), parse_usage(text)
            except ValueError as e:
                raise _Retryable(AgentValidationError(f"unusable reply from the model endpoint: {e}")) from e
            return AgentTurn(message, body["model"], *usage)
        if status in _RETRYABLE or status >= 500:
            failure = AgentUnavailableError(f"HTTP {status} from the model endpoint: {text[:500]}")
            raise _Retryable(failure, parse_retry_after(response.headers.get("Retry-After")))
        if status in _FATAL:
            raise AgentConfigError(
                f"The model endpoint {self._http.base_url} answered HTTP {status} for model {body['model']!r} "
                f"({_FATAL[status]}): {text[:500]}{base_url_hint(str(self._http.base_url)) if status == 404 else ''}"
            )
        if status in (400, 413) and is_context_limit(text):
            raise AgentContextLimitError(f"HTTP {status}: {text[:500]}")
        raise AgentValidationError(f"the model endpoint rejected the request with HTTP {status}: {text[:500]}")

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> OpenAIChatClient:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()


def base_url_hint(base_url: str) -> str:
    """A " Did you mean ...?" for an API root without a path (``http://host:8000``), else ``""``.

    OpenAI-compatible servers (vLLM, SGLang, llama.cpp, OpenAI) serve under ``/v1``; a bare ``host:port`` is
    the commonest wrong ``--base-url``.
    """
    url = httpx.URL(base_url)
    if url.path.strip("/"):
        return ""
    return f" Did you mean --base-url {str(url.copy_with(path='/v1'))}?"


def _model_ids(response: httpx.Response) -> list[str] | None:
    """The model ids of a ``GET /models`` answer (``{"data": [{"id": ...}]}``), or ``None`` if it is not one."""
    try:
        data = response.json()
    except ValueError:
        return None
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None
    return [str(entry["id"]) for entry in entries if isinstance(entry, dict) and "id" in entry]


def parse_usage(text: str) -> tuple[int | None, int | None]:
    """``(prompt_tokens, completion_tokens)`` of a chat-completions reply; ``None`` for what it does not report."""
    data = json.loads(text)
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return None, None
    return _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_reply(text: str) -> Message:
    """The assistant message of a chat-completions reply body.

    Raises:
        ValueError: If the body is not JSON or has no ``choices[0].message`` object.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e}): {text[:200]!r}") from e
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError(f"no choices[0] in {text[:200]!r}")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise ValueError(f"no choices[0].message in {text[:200]!r}")
    # Only what the next request may carry back: servers reject unknown assistant fields inconsistently.
    reply: Message = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        reply["tool_calls"] = message["tool_calls"]
    return reply


class OpenAIAgent:
    """An agent that asks a model behind an :class:`OpenAIChatClient` for every move (stateless)."""

    def __init__(self, client: OpenAIChatClient, *, model: str | None = None) -> None:
        """Use ``client`` (shared by all agents of an evaluation) for every request.

        Args:
            client: The endpoint's client.
            model: The model to ask; default the client's.
        """
        self.client = client
        self.model = model or client.model

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        """Nothing to prepare: the whole conversation is sent with every request."""

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        """The model's reply to the conversation so far, with its token counts."""
        return await self.client.turn(messages, tools, model=self.model)
