"""The local worker's app in-process: its interact fast path answers exactly as its Starlette route."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from typing import Any

import httpx
import pytest

from agentrl_controller.http.models import WorkerStartSampleRequest
from agentrl_controller.workers.local import LocalWorker, create_worker_app
from agentrl_controller.workers.noop import NoopEnv
from agentrl_envs.core import AssistantMessage, Turn
from tests.agentrl_controller.conftest import call


async def test_interact_fast_path_matches_the_route_and_odd_bodies_get_the_route_s_errors() -> None:
    worker = LocalWorker(NoopEnv, concurrency=4)
    transport = httpx.ASGITransport(app=create_worker_app(worker))
    messages = [call("noop", "{}"), {"role": "assistant", "content": "é"}, call("noop", '{"finish": true}')]
    runs = []
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://worker/api/") as client:
            # a content type the fast path leaves alone sends the same body down the Starlette route
            for sid, content_type in ((1, "application/json"), (2, "text/plain")):
                assert (await client.post("start_sample", json={"index": 0, "session_id": sid})).status_code == 200
                answers = []
                for message in [*messages, messages[0]]:  # the last one: the session has ended
                    body = json.dumps({"session_id": sid, "messages": [message]})
                    response = await client.post("interact", content=body, headers={"content-type": content_type})
                    answers.append(
                        (response.status_code, response.content.replace(b'"session_id":2', b'"session_id":1'))
                    )
                runs.append(answers)
            wrong = await client.post("interact", json={"session_id": "1", "messages": []})
            extra = await client.post("interact", json={"session_id": 1, "messages": [], "x": 1})
    finally:
        worker.close()
    fast, routed = runs
    assert [code for code, _ in fast] == [200, 200, 200, 400]
    assert json.loads(fast[2][1])["env_out"]["status"] == "completed"
    assert fast == routed
    assert wrong.status_code == 400 and json.loads(wrong.content)["detail"] == "No such session"  # "1" coerced
    assert extra.status_code == 422 and "Invalid request body" in extra.json()["detail"]


class ClosingNoop(NoopEnv):
    """A NoopEnv that counts its closes, and whose close fails (its sandbox went away first)."""

    made: list[ClosingNoop] = []

    def __init__(self) -> None:
        super().__init__()
        self.closes = 0
        ClosingNoop.made.append(self)

    def close(self) -> None:
        self.closes += 1
        super().close()
        raise OSError("the sandbox went away first")


async def test_sessions_reuse_finished_envs_and_every_env_is_closed_once_with_errors_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ClosingNoop.made.clear()
    worker = LocalWorker(ClosingNoop, concurrency=2)
    start = lambda sid: worker.start_sample(WorkerStartSampleRequest(index=0, session_id=sid))  # noqa: E731
    with caplog.at_level(logging.ERROR):
        await start(1)
        await start(2)
        await worker.interact(1, [call("noop", '{"finish": true}')])  # finished: its env goes back to the pool
        await start(3)
        assert worker.sessions[3].env is ClosingNoop.made[0] and len(ClosingNoop.made) == 2
        await worker.cancel(2)  # mid-episode: its env is closed, not reused
        assert ClosingNoop.made[1].closes == 1
        await start(4)
        assert worker.sessions[4].env is ClosingNoop.made[2]
        worker.close()
    assert [env.closes for env in ClosingNoop.made] == [1, 1, 1]
    failures = [r for r in caplog.records if "closing an environment" in r.getMessage()]
    assert len(failures) == 3 and all("went away first" in str(r.exc_info[1]) for r in failures)


class ThreadNoop(NoopEnv):
    """A NoopEnv that records the thread each reset and step ran on."""

    def __init__(self, delay_s: float) -> None:
        super().__init__(delay_s=delay_s)
        self.threads: list[int] = []

    def _start(self, index: int) -> list[dict[str, Any]]:
        self.threads.append(threading.get_ident())
        return super()._start(index)

    def _respond(self, message: AssistantMessage) -> Turn:
        self.threads.append(threading.get_ident())
        return super()._respond(message)


@pytest.mark.parametrize("delay_s", [0.0, 0.05])
async def test_a_nonblocking_env_steps_on_the_event_loop_and_any_other_in_a_thread(delay_s: float) -> None:
    made: list[ThreadNoop] = []
    worker = LocalWorker(lambda: made.append(ThreadNoop(delay_s)) or made[-1], concurrency=2)
    try:
        await worker.start_sample(WorkerStartSampleRequest(index=0, session_id=1))
        await worker.start_sample(WorkerStartSampleRequest(index=0, session_id=2))
        step = asyncio.ensure_future(worker.interact(1, [call("noop", "{}")]))
        await asyncio.sleep(0.01)
        if delay_s:
            # the slow step runs in a thread, so the event loop ran on meanwhile; a second request on the busy
            # session is refused
            assert not step.done()
            with pytest.raises(Exception, match="Task Executing"):
                await worker.interact(1, [call("noop", "{}")])
        answer = await step
        await worker.interact(2, [call("noop", "{}")])
    finally:
        worker.close()
    assert answer["env_out"]["messages"][0]["content"] == "ok"
    threads = {thread for env in made for thread in env.threads}
    assert (threads == {threading.get_ident()}) is (delay_s == 0.0), threads
    assert made[0].nonblocking is (delay_s == 0.0)
