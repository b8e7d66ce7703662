"""The controller API in-process (httpx.ASGITransport) over real local worker processes."""

import asyncio
import json

import pytest

from tests.agentrl_controller.conftest import call

pytestmark = pytest.mark.asyncio(loop_scope="module")


async def start(client, name="toy", index=2):
    response = await client.post("start_sample", json={"name": name, "index": index, "custom_task": None})
    assert response.status_code == 200, response.text
    return int(response.headers["session_id"]), response.json()


async def interact(client, sid, message):
    return await client.post("interact", headers={"session_id": str(sid)}, json={"messages": [message]})


async def test_episode_through_the_controller(shared) -> None:
    _, client = shared
    indices = (await client.get("get_indices", params={"name": "toy-std"})).json()
    assert indices == [0, 1, 2, 3, 4]
    sid, first = await start(client)
    assert first["session_id"] == sid
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert first["status"] == "running" and first["finish"] is False
    assert {t["function"]["name"] for t in first["tools"]} == {"echo", "answer"}
    out = (await interact(client, sid, call("echo", '{"text": "hi"}'))).json()
    assert out["messages"] == [{"role": "tool", "tool_call_id": "call_1", "content": "hi"}]
    out = (await interact(client, sid, call("answer", '{"value": 2}', "call_2"))).json()
    assert out["finish"] is True and out["status"] == "completed" and out["reward"] == 1.0
    assert out["metrics"]["score"] == 1.0 and out["metrics"]["infra_error"] is False
    late = await interact(client, sid, call("answer", '{"value": 2}'))
    assert late.status_code == 409 and "completed" in late.json()["error"]


async def test_round_limit_ends_the_session(shared) -> None:
    _, client = shared
    sid, _ = await start(client)
    for _ in range(2):
        assert (await interact(client, sid, call("echo", '{"text": "a"}'))).json()["finish"] is False
    out = (await interact(client, sid, call("echo", '{"text": "a"}'))).json()
    assert out["finish"] is True and out["status"] == "task limit reached"


async def test_names_resolve_with_hints(shared) -> None:
    _, client = shared
    assert (await client.get("get_indices", params={"name": "toy"})).json() == [0, 1, 2, 3, 4]
    response = await client.get("get_indices", params={"name": "toy-stdd"})
    assert response.status_code == 404
    assert "toy-std" in response.json()["error"]
    response = await client.post("start_sample", json={"name": "nope", "index": 0})
    assert response.status_code == 404


async def test_bad_requests_get_json_4xx(shared) -> None:
    _, client = shared
    assistant = {"messages": [{"role": "assistant", "content": "x"}]}
    cases = [
        await client.post("start_sample", content=b"{not json"),
        await client.post("start_sample", json={"name": "toy", "index": 0, "extra": 1}),
        await client.post("start_sample", json={"name": "toy", "index": 99}),
        await client.post("start_sample", json={"name": "toy", "index": "x"}),
        await client.post("start_sample", json={"name": "toy", "index": -1, "custom_task": {"a": 1}}),
        await client.post("interact", json=assistant),
        await client.post("interact", headers={"session_id": "abc"}, json=assistant),
        await client.post("interact", headers={"session_id": "1"}, json={"messages": []}),
        await client.post("interact", headers={"session_id": "123"}, json=assistant),
        await client.post("cancel", headers={"session_id": "123"}),
        await client.post("cancel"),
        await client.get("no_such_route"),
        await client.get("start_sample"),
        await client.post("receive_heartbeat", json={"name": "x", "address": "ftp://a", "concurrency": 1}),
        await client.post("receive_heartbeat", json={"name": "x", "address": "http://[::1", "concurrency": 1}),
        await client.post("receive_heartbeat", json={"name": "x", "address": "http://a\x0f/api", "concurrency": 1}),
    ]
    codes = [r.status_code for r in cases]
    assert codes == [422, 422, 400, 400, 400, 400, 400, 422, 404, 404, 400, 404, 405, 400, 400, 400]
    for response in cases:
        assert response.headers["content-type"] == "application/json"
        assert isinstance(response.json()["error"], str)


async def test_cancel_then_double_cancel_and_interact_after(shared) -> None:
    controller, client = shared
    sid, _ = await start(client)
    first = await client.post("cancel", headers={"session_id": str(sid)})
    assert first.status_code == 200 and first.json() == {"session_id": sid, "status": "cancelled"}
    again = await client.post("cancel", headers={"session_id": str(sid)})
    assert again.status_code == 409 and "cancelled" in again.json()["error"]
    after = await interact(client, sid, {"role": "assistant", "content": "hi"})
    assert after.status_code == 409
    await until(lambda: controller.pool.for_task("toy-std")[0].active == 0)


async def test_cancel_by_body_as_workers_send_it(shared) -> None:
    _, client = shared
    sid, _ = await start(client)
    response = await client.post("cancel", json={"session_id": sid})
    assert response.status_code == 200 and response.json()["status"] == "cancelled"


async def test_one_request_at_a_time_per_session_and_cancel_in_flight(shared) -> None:
    _, client = shared
    sid, _ = await start(client, "slow", 0)
    pending = asyncio.create_task(interact(client, sid, {"role": "assistant", "content": "x"}))
    await asyncio.sleep(0.3)
    busy = await interact(client, sid, {"role": "assistant", "content": "y"})
    assert busy.status_code == 409
    cancelled = await client.post("cancel", headers={"session_id": str(sid)})
    assert cancelled.status_code == 200
    out = await asyncio.wait_for(pending, 1.0)  # returns at once, not after the 2 s step
    assert out.status_code == 200
    assert out.json()["finish"] is True and out.json()["status"] == "cancelled"


async def test_burst_waits_in_the_admission_queue(shared) -> None:
    controller, client = shared
    sid, _ = await start(client, "toy-one")
    queued = asyncio.create_task(start(client, "toy-one", 1))
    await asyncio.sleep(0.3)
    assert not queued.done() and controller.admission.waiting("toy-one") == 1
    assert (await client.get("http://testserver/healthz")).json()["queued"] == 1
    await interact(client, sid, call("answer", '{"value": 2}'))
    second, first = await asyncio.wait_for(queued, 5)
    assert second != sid and first["status"] == "running"
    await client.post("cancel", headers={"session_id": str(second)})
    await until(lambda: controller.pool.for_task("toy-one")[0].active == 0)


async def test_queue_bound_and_timeout_give_429(shared, monkeypatch) -> None:
    controller, client = shared
    monkeypatch.setattr(controller.admission, "max_waiting", 1)
    monkeypatch.setattr(controller.admission, "timeout_s", 0.5)
    sid, _ = await start(client, "toy-one")
    waiting = asyncio.create_task(client.post("start_sample", json={"name": "toy-one", "index": 0}))
    await asyncio.sleep(0.1)
    refused = await client.post("start_sample", json={"name": "toy-one", "index": 0})
    assert refused.status_code == 429 and "max_waiting" in refused.json()["error"]
    timed_out = await waiting
    assert timed_out.status_code == 429 and "timeout_s" in timed_out.json()["error"]
    await client.post("cancel", headers={"session_id": str(sid)})


async def test_idle_sessions_expire(shared, monkeypatch) -> None:
    controller, client = shared
    monkeypatch.setattr(controller.config.sessions, "ttl_s", 0.6)
    sid, _ = await start(client)
    await asyncio.sleep(0.4)
    assert (await interact(client, sid, call("echo", '{"text": "a"}'))).status_code == 200  # renews
    await asyncio.sleep(0.4)
    assert sid in controller.sessions.sessions
    await until(lambda: sid not in controller.sessions.sessions, timeout_s=2.0)
    final = await interact(client, sid, call("echo", '{"text": "a"}'))  # the ending is told once
    assert final.status_code == 200 and final.json()["status"] == "cancelled" and final.json()["finish"] is True
    assert "idle" in final.json()["metrics"]["reason"]
    assert (await interact(client, sid, call("echo", '{"text": "a"}'))).status_code == 409


async def test_least_busy_worker_gets_the_session(shared) -> None:
    controller, client = shared
    sids = [(await start(client, "toy-two", index))[0] for index in range(4)]
    assert sorted(w.active for w in controller.pool.for_task("toy-two")) == [2, 2]
    listed = [w for w in (await client.get("list_workers")).json() if w["task"] == "toy-two"]
    assert len(listed) == 2 and all(w["kind"] == "local" and w["pid"] for w in listed)
    sessions = [s for s in (await client.get("list_sessions")).json() if s["task"] == "toy-two"]
    assert sorted(s["session_id"] for s in sessions) == sorted(sids)
    for sid in sids:
        await client.post("cancel", headers={"session_id": str(sid)})


async def test_metrics_and_health(shared) -> None:
    _, client = shared
    sid, _ = await start(client)
    await interact(client, sid, call("answer", '{"value": 0}'))
    text = (await client.get("http://testserver/metrics")).text
    assert 'controller_sessions_finished_total{status="completed",task="toy-std"}' in text
    assert 'controller_interacts_total{task="toy-std"}' in text
    assert 'controller_workers_up{kind="local",task="toy-std"} 1.0' in text
    assert "controller_request_latency_seconds_bucket" in text
    assert "controller_worker_latency_seconds_bucket" in text
    assert "controller_admission_queue_depth" in text
    assert (await client.get("http://testserver/healthz")).json()["status"] == "ok"


async def test_start_failure_is_a_task_error(shared) -> None:
    _, client = shared
    response = await client.post("start_sample", json={"name": "failing", "index": 0})
    assert response.status_code == 200
    out = response.json()
    assert out["finish"] is True and out["status"] == "task error" and out["metrics"]["infra_error"] is True


async def test_broken_task_gives_424_with_the_reason(shared) -> None:
    _, client = shared
    response = await client.get("get_indices", params={"name": "broken"})
    assert response.status_code == 424
    assert "no_such_module" in response.json()["error"]


async def test_tool_call_messages_are_forwarded_verbatim(shared) -> None:
    _, client = shared
    sid, _ = await start(client)
    out = (await interact(client, sid, call("echo", '{"text": "kept"}', "call_xyz"))).json()
    assert out["messages"][0]["tool_call_id"] == "call_xyz" and out["messages"][0]["content"] == "kept"
    await client.post("cancel", headers={"session_id": str(sid)})


@pytest.mark.parametrize("text", ["plain text", ""])
async def test_text_messages_get_an_answer(shared, text) -> None:
    _, client = shared
    sid, _ = await start(client)
    out = (await interact(client, sid, {"role": "assistant", "content": text})).json()
    assert out["messages"] == [{"role": "user", "content": "Use a tool."}]
    await client.post("cancel", headers={"session_id": str(sid)})


async def until(predicate, timeout_s: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def test_the_interact_fast_path_answers_exactly_as_the_fastapi_route(shared) -> None:
    # A well-formed interact takes the fast path; "+json" is JSON to FastAPI but sends the request down its route.
    _, client = shared
    messages = [
        call("echo", '{"text": "é ✓"}'),
        {"role": "assistant", "content": "hi"},
        call("answer", '{"value": 3}'),
        {},
    ]
    runs = []
    for content_type in ("application/json", "application/vnd.agentrl+json"):
        sid, _ = await start(client, index=3)
        answers = []
        for message in messages:
            response = await client.post(
                "interact",
                headers={"session_id": str(sid), "content-type": content_type},
                content=json.dumps({"messages": [message]}),
            )
            answers.append(
                (
                    response.status_code,
                    response.headers.get("session_id") == str(sid),
                    response.headers["content-type"],
                    response.content.replace(str(sid).encode(), b"<sid>"),  # the raw bytes: same JSON rendering
                )
            )
        runs.append(answers)
    fast, routed = runs
    assert [a[:2] for a in fast] == [(200, True), (200, True), (200, True), (409, False)]
    assert fast == routed
