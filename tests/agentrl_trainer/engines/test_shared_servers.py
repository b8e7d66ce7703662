"""The collectives behind shared vLLM servers, on a 2-process gloo group (no server needed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

from agentrl_trainer.engines.shared_servers import SharedServerEngine, push_from_main, share_servers
from tests.agentrl_trainer.test_distributed import _free_port


def _worker(rank: int, port: int, scenario: Callable[[int], Any], results: Any) -> None:
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        try:
            results.put((rank, "ok", scenario(rank)))
        except Exception as e:
            results.put((rank, type(e).__name__, str(e)))
    finally:
        torch.distributed.destroy_process_group()


def _on_two_processes(scenario: Callable[[int], Any]) -> dict[int, tuple[str, Any]]:
    # fork: the children inherit the imported torch and the scenario (a local function could not be pickled).
    results = mp.get_context("fork").SimpleQueue()
    mp.start_processes(_worker, args=(_free_port(), scenario, results), nprocs=2, start_method="fork")
    got = [results.get() for _ in range(2)]
    return {rank: (status, value) for rank, status, value in got}


@pytest.mark.timeout(120)
def test_every_process_gets_the_main_process_servers_and_only_the_main_process_owns_them() -> None:
    def scenario(rank: int) -> Any:
        # Only the main process's wishes count: the other one asks for nothing and has no config.
        wanted: dict[str, int | list[str]] = {"policy": ["http://a:1", "http://b:2"]} if rank == 0 else {}
        shared = share_servers(wanted, None, is_main=rank == 0)
        return shared.urls, len(shared.owned)

    got = _on_two_processes(scenario)
    assert got == {r: ("ok", ({"policy": ["http://a:1", "http://b:2"]}, 0)) for r in (0, 1)}


@pytest.mark.timeout(120)
def test_a_server_the_main_process_cannot_start_fails_every_process() -> None:
    def no_model() -> Any:
        raise FileNotFoundError("no staged model")

    def scenario(rank: int) -> Any:
        wanted: dict[str, int | list[str]] = {"policy": ["http://a:1"], "lagged0": 1}
        return share_servers(wanted, no_model if rank == 0 else None, is_main=rank == 0).urls

    got = _on_two_processes(scenario)
    assert got[0] == ("FileNotFoundError", "no staged model")
    assert got[1][0] == "RuntimeError" and "could not start the shared vLLM servers" in got[1][1]
    assert "no staged model" in got[1][1]


@pytest.mark.timeout(120)
def test_only_the_main_process_pushes_and_its_failure_reaches_the_others() -> None:
    def scenario(rank: int) -> Any:
        pushed: list[int] = []
        push_from_main(lambda: pushed.append(rank), is_main=rank == 0)

        def broken() -> None:
            raise ConnectionError("server gone")

        push_from_main(broken, is_main=rank == 0)
        return pushed

    got = _on_two_processes(scenario)
    assert got[0] == ("ConnectionError", "server gone")
    assert got[1][0] == "RuntimeError" and "failed to push weights" in got[1][1] and "server gone" in got[1][1]


@pytest.mark.timeout(120)
def test_a_successful_push_runs_once_and_every_process_returns() -> None:
    def scenario(rank: int) -> Any:
        pushed: list[int] = []
        push_from_main(lambda: pushed.append(rank), is_main=rank == 0)
        return pushed

    assert _on_two_processes(scenario) == {0: ("ok", [0]), 1: ("ok", [])}


def test_a_shared_server_engine_only_moves_its_version_tag() -> None:
    # Port 9 (discard) on a test net address: any request would fail, so passing proves none was made.
    engine = SharedServerEngine("http://192.0.2.1:9", eos_token_id=0, version=2)
    engine.update_weights({"w": torch.ones(1)}, 3)
    assert engine.version == 3 and engine.last_update_bytes == 0
