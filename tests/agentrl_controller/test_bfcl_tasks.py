"""BFCL categories on the controller: served by default (test split only), with each sample's own tools."""

from __future__ import annotations

import httpx

import agentrl_envs
from agentrl_controller.config import default_tasks
from agentrl_controller.workers.local import LocalWorker, create_worker_app


def test_default_config_serves_bfcl_test_names_only() -> None:
    names = {task.name: task for task in default_tasks()}
    assert names["bfcl_multi_turn_base-std"].aliases == ["bfcl_base"]
    assert names["bfcl_multi_turn_long_context-std"].split == "test"
    assert "bfcl_multi_turn_base-dev" not in names and "bfcl_multi_turn_base-env_train" not in names
    assert "dbbench-dev" in names


async def test_the_worker_sends_the_sample_s_tools_as_they_change() -> None:
    """miss_func 0 involves TwitterAPI and the file system and reveals ``sort`` at turn 3."""
    worker = LocalWorker(lambda: agentrl_envs.make("bfcl_miss_func").unwrapped, concurrency=1)
    transport = httpx.ASGITransport(app=create_worker_app(worker))
    text = {"role": "assistant", "content": "I cannot."}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://worker/api/") as client:
            started = (await client.post("start_sample", json={"index": 0, "session_id": 1})).json()
            offered = [{t["function"]["name"] for t in started["tools"]}]
            for _ in range(3):
                answer = await client.post("interact", json={"session_id": 1, "messages": [text]})
                offered.append({t["function"]["name"] for t in answer.json()["env_out"]["tools"]})
    finally:
        worker.close()
    assert "post_tweet" in offered[0] and "send_message" not in offered[0]  # the sample's classes, not the union
    assert ["sort" in names for names in offered] == [False, False, False, True]
