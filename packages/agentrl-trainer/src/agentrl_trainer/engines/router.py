"""A router over N engine replicas: least outstanding requests, sticky per trajectory, dead replicas taken out.

The router is itself a :class:`~agentrl_trainer.engines.protocol.RolloutEngine`, so the rollout loop and the
cross-policy sampler use it like one engine (a lagged router over lagged replicas works the same way).

- **Sticky per trajectory.** Every turn of an episode goes to the replica that served its first turn, so the
  replica's prefix cache holds the episode's context. An episode is one asyncio task (one coroutine per episode
  in the rollout loop), so the task is the key; the mapping is weak and goes away with the task.
- **Least outstanding requests.** A trajectory's first turn goes to the live replica with the fewest requests
  in flight (ties: the one used least recently), which balances long and short generations better than
  round-robin.
- **Failures.** A replica that cannot be reached, or fails a request, is marked dead and gets no more requests;
  the request raises :class:`ReplicaFailure`, an ``InfraError``, so the rollout loop treats the episode like
  one whose environment crashed: retried on a fresh environment (which the router sends to a live replica) or
  its group dropped, counted, and never rewarded. Requests in flight on other replicas are not affected.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import weakref
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentrl_envs.core import InfraError
from agentrl_trainer.engines.protocol import RolloutEngine
from agentrl_trainer.types import Generation

if TYPE_CHECKING:
    import torch

__all__ = ["EngineRouter", "ReplicaFailure", "RouterStats"]

logger = logging.getLogger(__name__)


class ReplicaFailure(InfraError):
    """A rollout engine replica failed mid-request; the episode must be retried elsewhere, never rewarded."""


class NoLiveReplica(ReplicaFailure):
    """Every replica is dead."""


@dataclass(slots=True)
class RouterStats:
    """Counters for the metrics: requests served, failed requests, replicas marked dead, sticky hits."""

    requests: int = 0
    failed_requests: int = 0
    dead_replicas: int = 0
    sticky_hits: int = 0


class EngineRouter:
    """Routes generations over several replicas of one policy (see the module docstring)."""

    def __init__(self, replicas: Sequence[RolloutEngine], *, name: str = "policy", sticky: bool = True) -> None:
        """Route over ``replicas``; their versions must agree.

        Args:
            replicas: Engines holding the same weights (e.g. one :class:`VLLMServerEngine` per server).
            name: Engine name recorded on every turn (the replicas' own names are replaced by it).
            sticky: Keep each trajectory on one replica (prefix-cache reuse); off, every turn is balanced anew.
        """
        if not replicas:
            raise ValueError("EngineRouter needs at least one replica.")
        versions = {r.version for r in replicas}
        if len(versions) != 1:
            raise ValueError(f"Replicas must start at the same policy version, got {sorted(versions)}.")
        self.name = name
        self.replicas = list(replicas)
        self.sticky = sticky
        self.outstanding = [0] * len(self.replicas)
        self.served = [0] * len(self.replicas)
        self.alive = [True] * len(self.replicas)
        self._last_used = [0] * len(self.replicas)
        self._clock = itertools.count(1)
        self._affinity: weakref.WeakKeyDictionary[asyncio.Task[object], int] = weakref.WeakKeyDictionary()
        self._version = versions.pop()
        self.stats = RouterStats()

    @property
    def version(self) -> int:
        """Policy version every live replica holds."""
        return self._version

    def _choose(self) -> int:
        live = [i for i, ok in enumerate(self.alive) if ok]
        if not live:
            raise NoLiveReplica(f"All {len(self.replicas)} rollout engine replicas of {self.name!r} are dead.")
        task = asyncio.current_task()
        if self.sticky and task is not None:
            i = self._affinity.get(task)
            if i is not None and self.alive[i]:
                self.stats.sticky_hits += 1
                return i
        i = min(live, key=lambda j: (self.outstanding[j], self._last_used[j]))
        if self.sticky and task is not None:
            self._affinity[task] = i
        return i

    async def agenerate(self, prompt_ids: list[int], *, max_new_tokens: int) -> Generation:
        """Generate on the chosen replica.

        Raises:
            ReplicaFailure: The replica failed (it is now marked dead) or none is alive.
        """
        i = self._choose()
        self.outstanding[i] += 1
        self._last_used[i] = next(self._clock)
        self.stats.requests += 1
        try:
            generation = await self.replicas[i].agenerate(prompt_ids, max_new_tokens=max_new_tokens)
        except asyncio.CancelledError:
            raise
        except ValueError:  # a bad request is the caller's bug, not the replica's
            raise
        except Exception as e:  # replica boundary: any other failure takes the replica out
            self.stats.failed_requests += 1
            self.mark_dead(i, e)
            raise ReplicaFailure(f"replica {i} of {self.name!r} failed: {e!r}") from e
        finally:
            self.outstanding[i] -= 1
        self.served[i] += 1
        return Generation(
            token_ids=generation.token_ids,
            logprobs=generation.logprobs,
            version=generation.version,
            engine=self.name,
            finish_reason=generation.finish_reason,
            token_versions=generation.token_versions,
        )

    def mark_dead(self, index: int, reason: object = None) -> None:
        """Take replica ``index`` out of rotation (idempotent)."""
        if self.alive[index]:
            self.alive[index] = False
            self.stats.dead_replicas += 1
            logger.error("rollout replica %d of %r is dead (%s); routing around it", index, self.name, reason)

    def update_weights(self, state_dict: Mapping[str, torch.Tensor], version: int) -> None:
        """Push the weights to every live replica in parallel; a replica that fails the update is marked dead.

        Raises:
            NoLiveReplica: If no replica took the update.
        """
        live = [i for i, ok in enumerate(self.alive) if ok]
        with ThreadPoolExecutor(max_workers=max(1, len(live))) as pool:
            futures = {i: pool.submit(self.replicas[i].update_weights, state_dict, version) for i in live}
        for i, future in futures.items():
            error = future.exception()
            if error is not None:
                self.mark_dead(i, error)
        if not any(self.alive):
            raise NoLiveReplica(f"No replica of {self.name!r} took the weights of version {version}.")
        self._version = version

    async def aclose(self) -> None:
        """Close every replica."""
        for replica in self.replicas:
            await replica.aclose()
