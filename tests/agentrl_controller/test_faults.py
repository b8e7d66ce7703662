"""Faults: a worker killed with SIGKILL mid-episode."""

import asyncio
import os
import signal
import time

import pytest

from agentrl_controller.config import ControllerConfig
from tests.agentrl_controller.conftest import noop_task, running

pytestmark = pytest.mark.slow


async def test_kill_9_worker_ends_its_sessions_and_it_comes_back() -> None:
    task = noop_task(name="victim", options={"delay_s": 1.0}, lazy=False)
    config = ControllerConfig(tasks=[task], workers={"restart_backoff_s": 0.0})
    async with running(config) as (controller, client):
        starts = [await client.post("start_sample", json={"name": "victim", "index": i}) for i in range(2)]
        idle_sid, busy_sid = (int(r.headers["session_id"]) for r in starts)
        worker = controller.pool.for_task("victim")[0]
        message = {"messages": [{"role": "assistant", "content": "x"}]}
        in_flight = asyncio.create_task(client.post("interact", headers={"session_id": str(busy_sid)}, json=message))
        await asyncio.sleep(0.3)
        killed_at = time.monotonic()
        os.kill(worker.pid, signal.SIGKILL)

        out = (await asyncio.wait_for(in_flight, 5)).json()
        assert out["finish"] is True and out["status"] == "task error" and out["metrics"]["infra_error"] is True
        assert time.monotonic() - killed_at < 2.0

        # A killed worker closes its sockets before its process is gone, so the failed request above may end its
        # session before the supervisor notices the death; once it has, idle sessions say the worker was lost.
        lost = 'controller_workers_lost_total{task="victim"} 1.0'
        deadline = time.monotonic() + 10
        while lost not in (await client.get("http://testserver/metrics")).text and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        idle = await client.post("interact", headers={"session_id": str(idle_sid)}, json=message)
        assert idle.status_code == 200
        assert idle.json()["status"] == "task error" and idle.json()["metrics"]["infra_error"] is True
        assert "worker lost" in idle.json()["metrics"]["error"]

        deadline = time.monotonic() + 60
        while not controller.pool.for_task("victim") and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        restarted = controller.pool.for_task("victim")[0]
        assert restarted.pid != worker.pid and restarted.restarts == 1
        again = await client.post("start_sample", json={"name": "victim", "index": 0})
        assert again.status_code == 200 and again.json()["status"] == "running"
        text = (await client.get("http://testserver/metrics")).text
        assert 'controller_workers_lost_total{task="victim"} 1.0' in text
        assert 'controller_sessions_finished_total{status="task error",task="victim"} 2.0' in text
