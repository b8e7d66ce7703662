"""A short soak (``bench/controller_soak.py``): episodes at full speed while workers are SIGKILLed at random.
The client's counts must equal the controller's: no completed episode lost or counted twice, no failed request.
Every env call runs on a new thread that exits (``--hand-off``), so the only task errors are the kills'."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from controller_load import controller  # noqa: E402
from controller_soak import BENCH, soak, task_config  # noqa: E402

pytestmark = pytest.mark.slow


def test_random_worker_kills_lose_and_duplicate_nothing(tmp_path) -> None:
    args = argparse.Namespace(
        minutes=0.5, sessions=60, workers=2, kill_every=5.0, in_flight=32, seed=1, task="noop", hand_off=True
    )
    settings = {"workers": {"restart_backoff_s": 0.0}, "admission": {"max_waiting": 10_000, "timeout_s": 60}}
    config = task_config("noop", hand_off=True)
    with controller(
        "noop", args.sessions, args.workers, tmp_path, settings, pythonpath=str(BENCH), task_config=config
    ) as service:
        figures = asyncio.run(soak(service.url, service.process.pid, args))
    assert figures["kills"] >= 3 and figures["episodes"] > 100, figures
    assert figures["completed_client"] == figures["completed_controller"] > 0, figures
    assert figures["task_errors_client"] == figures["task_errors_controller"] > 0, figures  # the kills were seen
    assert set(figures["task_errors_by_cause"]) == {"worker lost"}, figures
    assert figures["duplicate_session_ids"] == 0 and figures["request_failures"] == {}, figures
    assert figures["left_open"] == 0
