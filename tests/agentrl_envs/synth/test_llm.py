"""The LLM mode against a local stub of an OpenAI-compatible server that proposes a mix of valid and invalid
DB tasks: only the valid ones are kept, and every rejection is counted by its reason."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentrl_envs.core.data import DataRoot
from agentrl_envs.synth.db import DBAdapter
from agentrl_envs.synth.llm import LLMGenerator, extract_json
from agentrl_envs.synth.pipeline import synthesize
from agentrl_envs.tasks.db.data import load_samples

TABLE = {
    "table_name": "Harbor Ferries",
    "table_info": {
        "columns": [
            {"name": "Ferry", "type": "TEXT"},
            {"name": "Route", "type": "TEXT"},
            {"name": "Seats", "type": "TEXT"},
        ],
        "rows": [["Blue Gull", "North Pier", "120"], ["Sea Lark", "Old Town", "80"], ["Tern", "North Pier", "45"]],
    },
}


def _task(description: str, sql: str, query_type: str = "counting", **extra: Any) -> str:
    task = {"description": description, "table": TABLE, "type": [query_type], **extra}
    if query_type in ("INSERT", "UPDATE", "DELETE"):
        task["label"] = [sql]
    else:
        task["sql"] = {"query": sql}
    return json.dumps(task)


def replies(dev_sample: dict[str, Any]) -> list[str]:
    """One round of the stub's proposals: two valid, then one of each failure."""
    return [
        "Here is a task:\n```json\n"
        + _task(
            "How many ferries serve North Pier?", "SELECT COUNT(*) FROM `Harbor Ferries` WHERE Route = 'North Pier'"
        )
        + "\n```",
        _task("Retire the ferry Tern.", "DELETE FROM `Harbor Ferries` WHERE Ferry = 'Tern'", "DELETE"),
        "I cannot think of a task today.",  # unparsable
        _task(
            "How many ferries have more than 100 seats?",
            "SELECT COUNT(*) FROM `Harbor Ferries` WHERE CAST(Seats AS SIGNED) > 100",
            label=["2"],
        ),  # label_mismatch
        _task("Which ferry is fastest?", "SELECT Speed FROM `Harbor Ferries`", "other"),  # reference_sql_error
        _task(
            "Remove the ferry Kite.", "DELETE FROM `Harbor Ferries` WHERE Ferry = 'Kite'", "DELETE"
        ),  # empty_accepted
        json.dumps(dev_sample),  # near_duplicate of a dev sample
        json.dumps({"description": "no table at all", "type": ["counting"]}),  # malformed
    ]


@pytest.fixture
def stub(data: DataRoot) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A chat-completions server on 127.0.0.1 that answers with :func:`replies` in turn; yields its URL and requests."""
    answers = replies(data.jsonl("data/dbbench/dev.jsonl")[3])
    requests: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append(body)
            number = len(requests) - 1
            round_name = f"Line {number // len(answers) + 1}"  # each round proposes new tasks, not repeats
            content = answers[number % len(answers)].replace("Harbor Ferries", f"Harbor Ferries {round_name}")
            content = content.replace("no table at all", f"no table at all ({round_name})")
            reply = {"choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_only_proposals_the_env_validates_are_kept(data: DataRoot, stub: tuple[str, list], tmp_path: Path) -> None:
    url, requests = stub
    generator = LLMGenerator("db", data, base_url=url, model="stub", seed=0)
    out = tmp_path / "db.jsonl"
    # 8 replies a round, the first 2 of them valid: 4 kept tasks take a round and the next round's first two
    result = synthesize(DBAdapter(data), generator, name="llm", n=4, difficulties=(1,), out=out)
    counts = result.counts
    assert counts.kept == 4 and counts.oracle_success == 1.0
    assert dict(counts.rejected) == {
        "unparsable": 1, "label_mismatch": 1, "reference_sql_error": 1, "empty_accepted": 1,
        "near_duplicate": 1, "malformed": 1,
    }  # fmt: skip
    assert counts.generated == len(requests) == 10
    kept = load_samples(data, "train", out)
    assert sorted(s.query_type for s in kept) == ["DELETE", "DELETE", "counting", "counting"]
    assert [s.label for s in kept if s.query_type == "counting"] == [["2"], ["2"]]
    prompt = requests[0]["messages"][0]["content"]
    assert "Example 1:" in prompt and "Example 2:" in prompt and requests[0]["model"] == "stub"


def test_extract_json_reads_fenced_or_bare_objects() -> None:
    assert extract_json('x ```json\n{"a": 1}\n``` y') == {"a": 1}
    assert extract_json('Sure! {"a": [1, 2]} done') == {"a": [1, 2]}
    assert extract_json("no json here") is None
