import json
import random
import time

import httpx
import pytest

from agentrl_envs.eval import AgentConfigError, AgentContextLimitError, AgentUnavailableError, AgentValidationError
from agentrl_envs.eval.openai_agent import OpenAIChatClient, RetryPolicy, is_context_limit, parse_retry_after

from .openai_server import Canned, FakeOpenAIServer
from .toy_task import EvalToyEnv

FAST = RetryPolicy(max_retries=2, backoff_s=0.01, max_backoff_s=0.02)
CONTEXT_400 = json.dumps(
    {
        "error": {
            "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
)


def start_messages() -> tuple[list[dict], list[dict]]:
    env = EvalToyEnv()
    messages, info = env.reset(options={"index": 3})
    return messages, info["tools"]


async def complete(server: FakeOpenAIServer, **options: object) -> dict:
    messages, tools = start_messages()
    async with OpenAIChatClient(base_url=server.base_url, model="toy-model", retry=FAST, **options) as client:
        return await client.complete(messages, tools)


async def test_sends_model_messages_tools_sampling_and_key(openai_server: FakeOpenAIServer) -> None:
    reply = await complete(openai_server, api_key="sk-test", sampling={"temperature": 0.0, "max_tokens": 64})
    assert reply["role"] == "assistant"
    assert reply["tool_calls"][0]["function"]["name"] == "echo"
    body, headers = openai_server.requests[0], openai_server.headers[0]
    assert body["model"] == "toy-model" and body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert [t["function"]["name"] for t in body["tools"]] == ["echo", "answer"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert headers["Authorization"] == "Bearer sk-test"


async def test_429_is_retried_after_retry_after(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Canned(429, '{"error": {"message": "slow down"}}', {"Retry-After": "1"}))
    began = time.perf_counter()
    reply = await complete(openai_server)
    assert time.perf_counter() - began >= 1.0
    assert reply["tool_calls"][0]["function"]["name"] == "echo"
    assert len(openai_server.requests) == 2


async def test_malformed_reply_is_retried_then_used(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Canned(200, "this is not json"), Canned(200, '{"choices": []}'))
    reply = await complete(openai_server)
    assert reply["tool_calls"][0]["function"]["name"] == "echo"
    assert len(openai_server.requests) == 3


async def test_persistent_malformed_reply_fails_validation(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(*[Canned(200, '{"choices": [{"index": 0}]}')] * 3)
    with pytest.raises(AgentValidationError, match="no choices\\[0\\].message"):
        await complete(openai_server)
    assert len(openai_server.requests) == 3


async def test_context_limit_400_is_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Canned(400, CONTEXT_400))
    with pytest.raises(AgentContextLimitError, match="maximum context length"):
        await complete(openai_server)
    assert len(openai_server.requests) == 1


async def test_other_400_fails_validation(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Canned(400, '{"error": {"message": "tool_choice is invalid"}}'))
    with pytest.raises(AgentValidationError, match="HTTP 400"):
        await complete(openai_server)


async def test_401_stops_the_evaluation(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(Canned(401, '{"error": {"message": "bad key"}}'))
    with pytest.raises(AgentConfigError, match="check --api-key"):
        await complete(openai_server)


async def test_persistent_5xx_makes_the_agent_unavailable(openai_server: FakeOpenAIServer) -> None:
    openai_server.script(*[Canned(503, "overloaded")] * 3)
    with pytest.raises(AgentUnavailableError, match="HTTP 503"):
        await complete(openai_server)
    assert len(openai_server.requests) == 3


async def test_transport_errors_are_retried() -> None:
    attempts = []

    def handler(request: httpx.Request) -> httpx.Response:
        attempts.append(request)
        if len(attempts) == 1:
            raise httpx.ConnectError("connection refused")
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": "hi"}}]})

    client = OpenAIChatClient(base_url="http://model/v1", model="m", retry=FAST, transport=httpx.MockTransport(handler))
    assert await client.complete([{"role": "user", "content": "x"}], []) == {"role": "assistant", "content": "hi"}
    assert len(attempts) == 2 and str(attempts[0].url) == "http://model/v1/chat/completions"
    assert "tools" not in json.loads(attempts[0].content)
    await client.aclose()


def test_backoff_is_bounded_exponential_with_jitter() -> None:
    policy = RetryPolicy(backoff_s=1.0, max_backoff_s=8.0, max_retry_after_s=60.0)
    rng = random.Random(0)
    for attempt, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (10, 8.0)]:
        assert ceiling / 2 <= policy.delay_s(attempt, None, rng) <= ceiling
    assert policy.delay_s(0, 5.0, rng) == 5.0
    assert policy.delay_s(0, 3600.0, rng) == 60.0


@pytest.mark.parametrize(
    ("header", "expected"),
    [(None, None), ("", None), ("3", 3.0), ("0.5", 0.5), ("soon", None)],
)
def test_parse_retry_after(header: str | None, expected: float | None) -> None:
    assert parse_retry_after(header) == expected


def test_parse_retry_after_http_date() -> None:
    when = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= parse_retry_after(when) <= 31


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (CONTEXT_400, True),
        ('{"error": "prompt is too long: 210000 tokens > 200000 maximum"}', True),
        ('{"error": {"code": "context_length_exceeded"}}', True),
        ('{"error": "tool_choice is invalid"}', False),
        ('{"error": "unknown field temperature"}', False),
    ],
)
def test_is_context_limit(text: str, expected: bool) -> None:
    assert is_context_limit(text) is expected
