"""One set of vLLM servers for all the training processes of an ``accelerate launch`` run (``vllm_mode: server``).

With several processes every process keeps its own rollout producer, but they all sample from the same
servers, and only the main process changes the servers' weights:

* **start-up**: the main process starts the servers it is asked for (or takes the ones it is given), and their
  URLs go to the other processes with ``broadcast_object_list`` (:func:`share_servers`); a start-up failure is
  sent instead, so every process raises rather than waiting on a collective the main process never reaches;
* **weight push**: the main process stages and loads each version once; the others wait for the outcome
  (:func:`push_from_main`, a collective) and then only move their engines' version tags
  (:class:`SharedServerEngine`), so every process's turns sent after the push carry the new version;
* **shutdown**: the process that started a server stops it (:meth:`SharedServers.stop`), after the others are
  done with it (the trainer waits for every process first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import torch

from agentrl_trainer.engines.replicas import start_servers
from agentrl_trainer.engines.vllm_engine import VLLMServerEngine
from agentrl_trainer.engines.vllm_server import VLLMServer, VLLMServerConfig

__all__ = ["SharedServerEngine", "SharedServers", "push_from_main", "share_servers"]


class SharedServerEngine(VLLMServerEngine):
    """A server whose weights another process (the main one) loads: ``update_weights`` only moves the version tag.

    The caller must call it only once the main process's load of ``version`` is done (:func:`push_from_main`).
    """

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Record that the server now holds ``version``; ``state_dict`` is ignored (the main process pushed it)."""
        self._version = version


@dataclass
class SharedServers:
    """The servers of one run: each engine name's URLs, and the servers this process started (and must stop)."""

    urls: dict[str, list[str]]
    owned: list[VLLMServer] = field(default_factory=list)

    def stop(self) -> None:
        """Stop the servers this process started (call it once every process is done with them)."""
        for server in self.owned:
            server.stop()
        self.owned = []


def share_servers(
    wanted: Mapping[str, int | list[str]], config: Callable[[], VLLMServerConfig] | None, *, is_main: bool
) -> SharedServers:
    """The servers every engine name uses, the same on every process; call it on every process at the same point.

    Args:
        wanted: Per engine name, the URLs of running servers to use, or how many servers to start. Only the main
            process's is read.
        config: Makes (e.g. stages the model for) the config the main process starts servers with, called
            only when there are servers to start (its ``port`` is ignored: each takes a free one); the other
            processes may pass ``None``.
        is_main: Whether this is the main process (the only one that starts servers).

    Raises:
        RuntimeError: On the other processes, if the main process could not start a server; the main process
            raises its own error, after stopping the servers it had started.
    """
    message: list[object] = [None]
    shared = SharedServers(urls={})
    if is_main:
        try:
            server_config: VLLMServerConfig | None = None
            for name, given in wanted.items():
                if isinstance(given, list):
                    shared.urls[name] = list(given)
                    continue
                if config is None:
                    raise ValueError(f"Servers for {name!r} must be started, but no server config was given.")
                server_config = server_config or config()
                servers = start_servers(name, server_config, given)
                shared.owned += servers
                shared.urls[name] = [s.base_url for s in servers]
            message[0] = {"urls": shared.urls}
        except Exception as e:
            shared.stop()
            message[0] = {"error": f"{type(e).__name__}: {e}"}
            _broadcast(message)
            raise
    _broadcast(message)
    received = message[0]
    if not isinstance(received, dict) or "urls" not in received:
        error = received.get("error") if isinstance(received, dict) else received
        raise RuntimeError(f"The main process could not start the shared vLLM servers ({error}); see its log.")
    shared.urls = received["urls"]
    return shared


def push_from_main(push: Callable[[], None], *, is_main: bool) -> None:
    """Run ``push`` (the weight load) on the main process; every process returns once it is done.

    A collective: every process calls it at the same point. It doubles as the barrier after the push, so a
    process that then tags its turns with the new version only does so once the servers hold it.

    Raises:
        RuntimeError: On the other processes, if ``push`` failed on the main process (which re-raises its error).
    """
    status: list[object] = [None]
    error: BaseException | None = None
    if is_main:
        try:
            push()
        except Exception as e:
            error = e
            status[0] = f"{type(e).__name__}: {e}"
    _broadcast(status)
    if error is not None:
        raise error
    if status[0] is not None:
        raise RuntimeError(f"The main process failed to push weights to the shared vLLM servers: {status[0]}")


def _broadcast(objects: list[object]) -> None:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.broadcast_object_list(objects, src=0)
