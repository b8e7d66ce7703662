"""A worker on another host (``agentrl-controller worker``): one task served over TCP, registered by heartbeat.

It serves the same worker API as the local workers and upstream's ``agentrl-worker``, and heartbeats the
controller's ``receive_heartbeat`` every few seconds exactly as upstream's worker does, so the controller treats
both alike. Unlike upstream's, it can send the controller's bearer token.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp

from agentrl_controller.config import TaskConfig
from agentrl_controller.workers.local import build_worker, worker_server

__all__ = ["heartbeat_loop", "serve_remote_worker"]

logger = logging.getLogger(__name__)


async def heartbeat_loop(controller_url: str, body: dict[str, Any], *, token: str | None, interval_s: float) -> None:
    """Post ``body`` to the controller's ``receive_heartbeat`` every ``interval_s`` until cancelled.

    A failed beat is logged and retried at the next interval: the controller may start after the worker.
    """
    url = controller_url.rstrip("/") + "/receive_heartbeat"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = aiohttp.ClientTimeout(total=max(interval_s, 5.0))
    async with aiohttp.ClientSession(headers=headers, timeout=timeout, trust_env=False) as session:
        while True:
            try:
                async with session.post(url, json=body) as response:
                    if response.status != 200:
                        logger.warning("heartbeat refused by %s: %s %s", url, response.status, await response.text())
            except (TimeoutError, aiohttp.ClientError, OSError) as e:
                logger.warning("heartbeat to %s failed: %s: %s", url, type(e).__name__, e)
            await asyncio.sleep(interval_s)


async def serve_remote_worker(
    task: TaskConfig,
    *,
    controller_url: str,
    self_url: str,
    host: str,
    port: int,
    token: str | None = None,
    heartbeat_s: float = 8.0,
) -> None:
    """Serve ``task`` on ``host:port`` and register it with the controller as ``self_url`` until stopped."""
    worker = await build_worker(task)
    server = worker_server(worker, host=host, port=port)
    body = {
        "name": task.name,
        "address": self_url,
        "concurrency": task.concurrency,
        "indices": list(range(worker.num_samples)),
    }
    beats = asyncio.create_task(heartbeat_loop(controller_url, body, token=token, interval_s=heartbeat_s))
    logger.info("worker for %s on %s:%s registers with %s as %s", task.name, host, port, controller_url, self_url)
    try:
        await server.serve()
    finally:
        beats.cancel()
        await asyncio.to_thread(worker.close)
