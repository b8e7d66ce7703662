"""Every route of a real controller process, fuzzed with hypothesis: never a 5xx, errors are JSON, no crash.

Bodies are random JSON, near-valid requests with wrong types/values, and non-JSON bytes; ``session_id`` headers are
random integers and text; heartbeats register workers at unreachable or malformed addresses, whose sessions must
then end as task errors, not as server errors.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.agentrl_controller.conftest import Server, noop_task, start_server, stop_server, toy_task

pytestmark = pytest.mark.slow

ROUTES = [
    ("GET", "get_indices"),
    ("POST", "start_sample"),
    ("POST", "interact"),
    ("POST", "cancel"),
    ("GET", "list_sessions"),
    ("GET", "list_workers"),
    ("POST", "receive_heartbeat"),
    ("POST", "cancel_notice"),
]
SESSION_HEAVY = ROUTES + [("POST", "start_sample")] * 3 + [("POST", "interact")] * 5
"""Routes to fuzz, weighted towards the ones that open and drive sessions."""
NAMES = st.sampled_from(["toy-std", "toy", "noop", "fuzz-task", "dbbench-std", "", "x" * 300]) | st.text(max_size=20)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
JSON = st.recursive(SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=10), c, max_size=4))
INDEX = st.integers(-3, 8) | st.integers(-(2**70), 2**70) | st.text(max_size=5) | JSON
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["assistant", "user", "tool", "x"]) | st.text(max_size=5)},
    optional={
        "content": st.none() | st.text(max_size=50) | JSON,
        "tool_calls": st.lists(
            st.fixed_dictionaries(
                {"id": st.text(max_size=5), "type": st.just("function")},
                optional={
                    "function": st.fixed_dictionaries(
                        {"name": st.sampled_from(["echo", "answer", "nope"]) | st.text(max_size=5)},
                        optional={"arguments": st.sampled_from(['{"value": 1}', '{"text": "a"}', "{", "[]"]) | JSON},
                    )
                },
            ),
            max_size=3,
        )
        | JSON,
    },
)
ADDRESS = st.sampled_from(["http://127.0.0.1:1/api", "http://[::1", "http://127.0.0.1:99999/api", "ftp://x"]) | (
    st.text(max_size=20).map(lambda t: "http://127.0.0.1:1/" + t)
)
BODY = (
    JSON
    | st.fixed_dictionaries({"name": NAMES, "index": INDEX}, optional={"custom_task": JSON})
    | st.fixed_dictionaries({"messages": st.lists(MESSAGE, max_size=3) | JSON})
    | st.fixed_dictionaries(
        {"name": NAMES, "address": ADDRESS, "concurrency": st.integers(-1, 2**40) | JSON},
        optional={"indices": st.lists(INDEX, max_size=5) | JSON},
    )
    | st.fixed_dictionaries({"session_id": st.integers(-(2**70), 2**70) | JSON})
)
RAW = st.binary(max_size=200) | st.sampled_from([b"{", b"null", b"[]", b'{"name": "toy"', b"\xff\xfe"])
HEADER = (
    st.none()
    | st.integers(-(2**70), 2**70).map(str)
    | st.integers(0, 50).map(str)
    | st.from_regex(r"[ -~]{0,20}", fullmatch=True)
)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, httpx.Client]]:
    tasks = [toy_task(lazy=False, options={"max_rounds": 2}), noop_task(lazy=False)]
    server = start_server(tmp_path_factory.mktemp("fuzz"), tasks, max_body_bytes=64 * 1024)
    with httpx.Client(base_url=server.url + "/", timeout=30) as client:
        yield server, client
    stop_server(server)
    assert "Traceback" not in server.log.read_text(), server.log.read_text()[-5000:]


SEEN: Counter[tuple[str, int]] = Counter()
"""(route, status code) pairs the fuzz produced: proof that it reached past validation."""


def check(response: httpx.Response) -> None:
    SEEN[(response.request.url.path.rsplit("/", 1)[-1], response.status_code)] += 1
    assert response.status_code < 500, (response.request.method, response.request.url, response.text[:1000])
    if response.status_code >= 400:
        assert isinstance(response.json()["error"], str) and response.json()["error"]


WELL_FORMED = {
    "get_indices": st.none(),
    "start_sample": st.fixed_dictionaries(
        {"name": st.sampled_from(["toy-std", "toy", "noop", "fuzz-task"]), "index": st.integers(-1, 6)},
        optional={"custom_task": st.none() | JSON},
    ),
    "interact": st.fixed_dictionaries({"messages": st.lists(MESSAGE, min_size=1, max_size=3)}),
    "cancel": st.none() | st.fixed_dictionaries({"session_id": st.integers(0, 50)}),
    "list_sessions": st.none(),
    "list_workers": st.none(),
    "receive_heartbeat": st.fixed_dictionaries(
        {"name": st.just("fuzz-task"), "address": ADDRESS, "concurrency": st.integers(1, 8)},
        optional={"indices": st.lists(st.integers(0, 5), max_size=5)},
    ),
    "cancel_notice": st.fixed_dictionaries({"session_id": st.integers(0, 50)}),
}
"""Per route, bodies that pass validation, so the fuzz also reaches sessions, workers and the admission queue."""


@settings(
    max_examples=400, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), route=st.sampled_from(SESSION_HEAVY), raw=st.none() | RAW, name=st.none() | NAMES)
def test_no_route_answers_5xx(fuzzed, data, route, raw, name) -> None:
    _, client = fuzzed
    method, path = route
    body = data.draw(st.one_of(WELL_FORMED[path], WELL_FORMED[path], BODY), label="body")
    open_ids = [str(s["session_id"]) for s in client.get("list_sessions").json()]
    # Draw the same shapes whatever is open (hypothesis replays draws), then use an open id two times in three.
    session_id = data.draw(HEADER, label="session_id")
    use_open, pick = data.draw(st.integers(0, 2), label="use an open session"), data.draw(st.integers(0, 999))
    if use_open and open_ids:
        session_id = open_ids[pick % len(open_ids)]
    headers = {} if session_id is None else {"session_id": session_id}
    params = {} if name is None else {"name": name}
    if method == "GET":
        response = client.get(path, params=params, headers=headers)
    elif raw is not None and data.draw(st.booleans(), label="send raw bytes"):
        response = client.post(path, content=raw, headers={**headers, "content-type": "application/json"})
    else:
        response = client.post(path, json=body, headers=headers)
    check(response)


def test_still_serving_after_the_fuzz(fuzzed) -> None:
    server, client = fuzzed
    seen = " ".join(f"{route}:{code}={n}" for (route, code), n in sorted(SEEN.items()))
    for route in ("start_sample", "interact", "cancel", "receive_heartbeat", "get_indices"):
        assert SEEN[(route, 200)] > 0, seen  # each route was driven into its working path, not only refused
    assert server.process.poll() is None
    for session in client.get("list_sessions").json():  # the fuzz left sessions open: all can be cancelled
        check(client.post("cancel", headers={"session_id": str(session["session_id"])}))
    started = client.post("start_sample", json={"name": "toy-std", "index": 1})
    assert started.status_code == 200 and started.json()["status"] == "running"
    assert client.get("http://" + server.url.split("/")[2] + "/healthz").json()["status"] == "ok"
