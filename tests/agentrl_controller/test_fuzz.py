"""Every route of a real controller process, fuzzed with hypothesis: never a 5xx, errors are JSON, no crash.

Bodies are random JSON, near-valid requests with wrong types/values, and non-JSON bytes; ``session_id`` headers are
random integers and text; heartbeats register workers at unreachable or malformed addresses, whose sessions must
then end as task errors, not as server errors. Interact bodies carry the env step fuzz's assistant messages
(:mod:`tests.agentrl_envs.step_fuzz`), which must never end a session as an infrastructure error. A ledger of
the sessions the fuzz opened checks that none is lost or duplicated, and schemathesis drives every operation
of the controller's own OpenAPI schema.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from tests.agentrl_controller.conftest import Server, noop_task, start_server, stop_server, toy_task
from tests.agentrl_envs.core.toy_env import TOOLS
from tests.agentrl_envs.step_fuzz import actions, tool_parameters

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
SERVED = st.sampled_from(["toy-std", "toy", "noop"])
"""Names the fuzz's controller serves, drawn often enough that GET routes reach their working path every run."""
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
WELL_FORMED_ADDRESS = st.integers(0, 2).flatmap(lambda k: ADDRESS if k == 2 else st.just("http://127.0.0.1:1/api"))
"""A valid (unreachable) worker address in two draws of three (a drawn int: a one_of branch can be starved), so
registration is reached in every run."""
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
STEP_ACTION = actions(tool_parameters(TOOLS))
"""The env step fuzz's assistant messages, for the toy task's tools."""
RAW = st.binary(max_size=200) | st.sampled_from([b"{", b"null", b"[]", b'{"name": "toy"', b"\xff\xfe"])
HEADER = (
    st.none()
    | st.integers(-(2**70), 2**70).map(str)
    | st.integers(0, 50).map(str)
    | st.from_regex(r"[ -~]{0,20}", fullmatch=True).map(str.strip)  # h11 refuses to send padded header values
)


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, httpx.Client]]:
    tasks = [toy_task(lazy=False, options={"max_rounds": 2}), noop_task(lazy=False)]
    # a short admission wait: sessions the fuzz leaves open fill the toy task, and a start_sample must then get
    # its 429 within the client's timeout rather than queue for the default ten minutes
    server = start_server(
        tmp_path_factory.mktemp("fuzz"), tasks, max_body_bytes=64 * 1024, admission={"timeout_s": 2.0}
    )
    with httpx.Client(base_url=server.url + "/", timeout=30) as client:
        yield server, client
    stop_server(server)
    assert "Traceback" not in server.log.read_text(), server.log.read_text()[-5000:]


@dataclass
class Ledger:
    """The sessions the fuzz opened, kept from the answers it got: the controller must list exactly these."""

    ever: set[int] = field(default_factory=set)
    """Every id start_sample returned."""
    open: set[int] = field(default_factory=set)
    """Ids started and not yet ended by an answer the fuzz saw (finish, or a cancel)."""

    def record(self, path: str, session_id: str | None, response: httpx.Response) -> None:
        """Account for one answer; a lost or duplicated session fails here."""
        body: Any = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        if path == "start_sample" and response.status_code == 200:
            sid = int(response.headers["session_id"])
            assert sid not in self.ever, f"start_sample returned session {sid} twice"
            self.ever.add(sid)
            if not body["finish"]:
                self.open.add(sid)
        elif path == "interact" and session_id is not None and session_id.lstrip("-").isdigit():
            sid = int(session_id)
            if response.status_code == 404:
                assert sid not in self.open, f"open session {sid} was lost: {response.text[:300]}"
            elif response.status_code == 200 and body["finish"]:
                self.open.discard(sid)
        elif path == "cancel" and response.status_code == 200:
            self.open.discard(body["session_id"])

    def audit(self, listed: list[dict[str, Any]]) -> None:
        """``list_sessions`` holds each open session once, and nothing the fuzz did not start."""
        ids = [s["session_id"] for s in listed]
        assert len(ids) == len(set(ids)), f"a session is listed twice: {sorted(ids)}"
        assert set(ids) <= self.ever, f"sessions nobody started: {set(ids) - self.ever}"
        assert self.open <= set(ids), f"open sessions missing from list_sessions: {self.open - set(ids)}"


LEDGER = Ledger()
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
    "interact": st.fixed_dictionaries({"messages": st.lists(MESSAGE, min_size=1, max_size=3)})
    | st.fixed_dictionaries({"messages": st.lists(STEP_ACTION, min_size=1, max_size=1)}),
    "cancel": st.none() | st.fixed_dictionaries({"session_id": st.integers(0, 50)}),
    "list_sessions": st.none(),
    "list_workers": st.none(),
    "receive_heartbeat": st.fixed_dictionaries(
        {"name": st.just("fuzz-task"), "address": WELL_FORMED_ADDRESS, "concurrency": st.integers(1, 8)},
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
    # a drawn int, not one_of: hypothesis' adaptive generation (and the literals it borrows from whatever modules
    # the session imported) can starve a one_of branch, and the working paths must be reached in every run
    well_formed = data.draw(st.integers(0, 2), label="well-formed body") < 2  # 0, hypothesis' favourite, too
    body = data.draw(WELL_FORMED[path] if well_formed else BODY, label="body")
    open_ids = [str(s["session_id"]) for s in client.get("list_sessions").json()]
    # Draw the same shapes whatever is open (hypothesis replays draws), then use an open id two times in three.
    session_id = data.draw(HEADER, label="session_id")
    use_open, pick = data.draw(st.integers(0, 2), label="use an open session"), data.draw(st.integers(0, 999))
    if use_open and open_ids:
        session_id = open_ids[pick % len(open_ids)]
    headers = {} if session_id is None else {"session_id": session_id}
    if data.draw(st.integers(0, 2), label="a served task name") < 2:  # drawn int, as for the body
        name = data.draw(SERVED, label="name")
    params = {} if name is None else {"name": name}
    if method == "GET":
        response = client.get(path, params=params, headers=headers)
    elif raw is not None and data.draw(st.booleans(), label="send raw bytes"):
        response = client.post(path, content=raw, headers={**headers, "content-type": "application/json"})
    else:
        # serialised here: httpx's strict encoder refuses NaN and lone surrogates, which a client may still send
        # (as Python's json writes them), and the controller must refuse with a 4xx
        content = json.dumps(body).encode()
        response = client.post(path, content=content, headers={**headers, "content-type": "application/json"})
    check(response)
    LEDGER.record(path, session_id, response)
    if path == "interact" and response.status_code == 200 and session_id in open_ids:
        # model output, however hostile, is the agent's failure: never a task error of the env
        assert response.json()["metrics"].get("infra_error") is not True, (body, response.text[:1000])
    LEDGER.audit(client.get("list_sessions").json())


@pytest.fixture(scope="module")
def openapi_cases(fuzzed) -> st.SearchStrategy[Any]:
    """Schemathesis cases (valid and invalid) for every operation of the controller's own OpenAPI schema."""
    server, _ = fuzzed
    document = httpx.get(server.url.removesuffix("/api") + "/openapi.json", timeout=30).json()
    operations = [result.ok() for result in schemathesis.openapi.from_dict(document).get_all_operations()]
    assert {op.path for op in operations} >= {"/api/start_sample", "/api/interact", "/api/cancel"}
    modes = [GenerationMode.POSITIVE, GenerationMode.NEGATIVE]
    return st.one_of(*(op.as_strategy(generation_mode=mode) for op in operations for mode in modes))


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_openapi_operations_answer_4xx_never_5xx(fuzzed, openapi_cases, data) -> None:
    """Schemathesis' positive and negative cases for every documented operation: 4xx for bad payloads, never 5xx."""
    server, client = fuzzed
    case = data.draw(openapi_cases, label="case")
    response = case.call(base_url=server.url.removesuffix("/api"), timeout=30)
    SEEN[(case.path.rsplit("/", 1)[-1] + " (openapi)", response.status_code)] += 1
    assert response.status_code < 500, (case.method, case.path, case.body, response.text[:1000])
    if response.status_code >= 400 and case.path.startswith("/api/"):
        assert isinstance(response.json()["error"], str) and response.json()["error"]
    if case.path == "/api/start_sample" and response.status_code == 200:
        assert int(response.headers["session_id"]) not in LEDGER.ever, "start_sample returned a session twice"
        LEDGER.ever.add(int(response.headers["session_id"]))
        LEDGER.open.add(int(response.headers["session_id"]))
    if case.path in ("/api/interact", "/api/cancel") and response.status_code == 200:
        LEDGER.open.discard(response.json()["session_id"])  # ended (or went on) as the answer says
        if case.path == "/api/interact" and not response.json()["finish"]:
            LEDGER.open.add(response.json()["session_id"])
    LEDGER.audit(client.get("list_sessions").json())


@pytest.mark.parametrize(
    "arguments",
    ["[" * 30_000 + "]" * 30_000, '{"value": ' + "1" * 60_000 + "}"],
    ids=["nested brackets", "60,000-digit number"],
)
def test_hostile_arguments_through_the_api_are_the_agents_error(fuzzed, arguments: str) -> None:
    """Issue 16 end to end: what used to end a session as ``task error`` is an invalid-arguments message."""
    _, client = fuzzed
    for session in client.get("list_sessions").json():  # the fuzz may have filled the toy task: free it
        LEDGER.record("cancel", None, client.post("cancel", headers={"session_id": str(session["session_id"])}))
    started = client.post("start_sample", json={"name": "toy-std", "index": 0})
    assert started.status_code == 200, started.text
    sid = started.headers["session_id"]
    LEDGER.record("start_sample", None, started)
    call = {"id": "c1", "function": {"name": "answer", "arguments": arguments}}
    message = {"role": "assistant", "tool_calls": [call]}
    answer = client.post("interact", json={"messages": [message]}, headers={"session_id": sid})
    LEDGER.record("interact", sid, answer)
    assert answer.status_code == 200, answer.text[:500]
    body = answer.json()
    assert (body["status"], body["finish"], body["metrics"].get("infra_error", False)) == ("running", False, False)
    assert body["messages"][0]["content"].startswith("Arguments of 'answer' ")


def test_still_serving_after_the_fuzz(fuzzed) -> None:
    server, client = fuzzed
    seen = " ".join(f"{route}:{code}={n}" for (route, code), n in sorted(SEEN.items()))
    for route in ("start_sample", "interact", "cancel", "receive_heartbeat", "get_indices"):
        assert SEEN[(route, 200)] > 0, seen  # each route was driven into its working path, not only refused
    assert server.process.poll() is None
    assert LEDGER.ever and LEDGER.open, "the fuzz never held a session open"
    for session in client.get("list_sessions").json():  # the fuzz left sessions open: all can be cancelled
        sid = str(session["session_id"])
        response = client.post("cancel", headers={"session_id": sid})
        check(response)
        LEDGER.record("cancel", sid, response)
    assert not LEDGER.open and client.get("list_sessions").json() == []
    started = client.post("start_sample", json={"name": "toy-std", "index": 1})
    assert started.status_code == 200 and started.json()["status"] == "running"
    assert client.get("http://" + server.url.split("/")[2] + "/healthz").json()["status"] == "ok"
