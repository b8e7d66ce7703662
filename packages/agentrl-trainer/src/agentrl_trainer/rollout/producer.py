"""The rollout producer: GRPO groups played continuously beside training, handed over through a bounded queue.

A background thread runs an asyncio loop with one coroutine per episode. A group (``num_generations``
episodes of one training row) holds a slot from the moment it starts until the trainer takes it, so at
most ``queue_size`` groups are in flight or waiting: that bound is the backpressure, and it caps how stale a
waiting group can get. In ``sync`` mode no slot is free until the trainer asks for a batch, which gives
TRL's generate-then-train schedule on the same code path.

Staleness is bounded at admission too (:meth:`agentrl_trainer.staleness.StalenessRule.admits`): with
``max_staleness`` S and ``groups_per_version`` B (the trainer's minimum groups per step), a new group starts only
while fewer than ``(S + 1) * B`` groups are in flight (started and not yet taken by the trainer). The trainer
takes at least B groups per version, so a new group has fewer than
``(S + 1) * B`` groups ahead of it and, if groups complete in turn, is taken within S + 1 versions (a slow tail
can still go stale: the trainer drops or down-weights it). This is AReaL's rule (by version v, at most
``(v + S + 1) * B`` groups started) counted by the groups the trainer actually took: when a step takes more than
B (the dynamic batch), as many new groups may start, where counting B per version let the dynamic batch eat the
lookahead and starved the trainer (docs/benchmarks.md, "Async pays"). Groups dropped before training are not
counted. A run with an end also caps the groups in flight at the most it can still take
(:attr:`RolloutProducer.groups_left`): near the end of a run no group starts that no step would train.

Environment faults never become rewards: an episode whose environment failed is retried on a fresh
environment (up to ``max_infra_retries``) or, with ``infra_error_policy="drop_group"`` or once the
retries are spent, its whole group is dropped. Both are counted, each kind of fault is logged once with its
cause, samples that can never start are skipped, and the run stops when faults dominate
(:mod:`agentrl_trainer.rollout.faults`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

from agentrl_envs.core import EnvPool
from agentrl_envs.core.protocols import EnvFactory
from agentrl_trainer.rollout.cross_policy import EngineSampler
from agentrl_trainer.rollout.episode import EpisodeLimits, run_episode
from agentrl_trainer.rollout.faults import FaultLog, InfraErrorRateExceeded
from agentrl_trainer.staleness import StalenessRule
from agentrl_trainer.types import Group, TrainingRow, Trajectory

__all__ = ["EnvFactory", "InfraErrorPolicy", "ProducerStats", "RolloutMode", "RolloutProducer"]

logger = logging.getLogger(__name__)

_MAX_SKIPPED_IN_A_ROW = 100_000
"""Rows skipped one after another before the producer gives up (every row it is given cannot start)."""

RolloutMode = Literal["async", "sync"]
"""``async``: groups play beside training; ``sync``: only once the trainer asks for a batch (TRL's schedule)."""

InfraErrorPolicy = Literal["retry", "drop_group"]
"""An episode whose environment failed: replay it on a fresh environment, or drop its whole group."""


@dataclass(slots=True)
class ProducerStats:
    """Counters the trainer turns into metrics (read from the trainer thread; ints are updated atomically)."""

    episodes: int = 0
    groups: int = 0
    infra_errors: int = 0
    infra_retries: int = 0
    dropped_groups: int = 0
    busy_started: float = 0.0


class RolloutProducer:
    """Plays GRPO groups in a background event loop and queues the complete ones for the trainer."""

    def __init__(
        self,
        *,
        rows: Iterator[TrainingRow],
        env_factory: EnvFactory,
        sampler: EngineSampler,
        tokenizer: Any,
        num_generations: int,
        limits: EpisodeLimits,
        queue_size: int,
        mode: RolloutMode = "async",
        infra_error_policy: InfraErrorPolicy = "retry",
        max_infra_retries: int = 2,
        max_concurrent_envs: int = 64,
        staleness: StalenessRule | None = None,
        groups_per_version: int = 1,
        max_infra_error_rate: float = 1.0,
        infra_error_window: int = 32,
    ) -> None:
        """Configure the producer; :meth:`start` begins playing."""
        if queue_size < 1:
            raise ValueError(f"queue_size must be >= 1, got {queue_size}.")
        self.rows = rows
        self.env_factory = env_factory
        self.pools: dict[tuple[str, str], EnvPool[Any]] = {}
        """Reusable envs per ``(task, split)``; one that failed is closed, not reused."""
        self.sampler = sampler
        self.tokenizer = tokenizer
        self.num_generations = num_generations
        self.limits = limits
        self.queue_size = queue_size
        self.mode = mode
        self.infra_error_policy = infra_error_policy
        self.max_infra_retries = max_infra_retries
        self.max_concurrent_envs = max_concurrent_envs
        self.staleness = staleness
        """The admission half of the staleness rule (async mode); ``None``: admit whenever a slot is free."""
        self.groups_per_version = groups_per_version
        self.groups_left: int | None = None
        """Async mode: the most groups the trainer can still take before the run ends (its remaining steps times
        ``max_groups_per_step``), set by the trainer; no more start than that. ``None``: no end in sight."""
        self.started_groups = 0
        self.taken_groups = 0
        self.stats = ProducerStats()
        self.status_counts: Counter[str] = Counter()
        self.faults = FaultLog(max_rate=max_infra_error_rate, window=infra_error_window)
        self.skipped_rows = 0
        self._groups: queue.Queue[Group] = queue.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._slots: asyncio.Semaphore | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stopping = False
        self.leaked_tasks = 0

    # ----------------------------------------------------------------- trainer side

    def start(self) -> None:
        """Start the background loop."""
        if self._thread is not None:
            raise RuntimeError("The rollout producer is already running.")
        self._thread = threading.Thread(target=self._run_thread, name="agentrl-rollouts", daemon=True)
        self._thread.start()
        self._ready.wait()

    def request(self, groups: int) -> None:
        """Sync mode: allow ``groups`` more groups to start."""
        for _ in range(groups):
            self._release_slot()

    def get_groups(self, min_groups: int, max_groups: int, timeout_s: float) -> list[Group]:
        """Block until ``min_groups`` complete groups are queued, then take up to ``max_groups``.

        Raises:
            RuntimeError: If the producer failed, or no group arrived within ``timeout_s``.
        """
        taken: list[Group] = []
        deadline = time.monotonic() + timeout_s
        while len(taken) < min_groups:
            self._raise_if_failed()
            try:
                taken.append(self._groups.get(timeout=min(1.0, max(0.01, deadline - time.monotonic()))))
            except queue.Empty:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"No complete rollout group within {timeout_s:.0f}s (have {len(taken)}, need {min_groups}); "
                        "check the environments, or raise rollout_timeout_s."
                    ) from None
        while len(taken) < max_groups:
            try:
                taken.append(self._groups.get_nowait())
            except queue.Empty:
                break
        self.taken_groups += len(taken)
        if self.mode == "async":
            for _ in taken:
                self._release_slot()
        return taken

    @property
    def queue_depth(self) -> int:
        """Complete groups waiting for the trainer."""
        return self._groups.qsize()

    def stop(self, timeout_s: float = 60.0) -> None:
        """Cancel every episode, close the engines and environments, and join the thread."""
        if self._thread is None:
            return
        self._stopping = True
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel_all)
        self._thread.join(timeout_s)
        if self._thread.is_alive():
            raise RuntimeError(f"The rollout thread did not stop within {timeout_s}s.")
        self._thread = None

    # ----------------------------------------------------------------- rollout thread

    def _release_slot(self) -> None:
        if self._loop is not None and self._slots is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._slots.release)

    def _raise_if_failed(self) -> None:
        if isinstance(self._error, InfraErrorRateExceeded):
            raise RuntimeError(f"The rollouts stopped: {self._error}") from self._error
        if self._error is not None:
            raise RuntimeError(f"The rollout producer failed: {self._error!r}") from self._error

    def _run_thread(self) -> None:
        loop = asyncio.new_event_loop()
        # Environments run in threads (astep); the default pool (cpu+4) would cap concurrent env steps.
        loop.set_default_executor(ThreadPoolExecutor(max_workers=self.max_concurrent_envs))
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        except asyncio.CancelledError:
            pass
        except BaseException as e:  # process boundary: surface the failure to the trainer
            logger.exception("rollout producer failed")
            self._error = e
        finally:
            try:
                loop.run_until_complete(self._shutdown())
                # loop.close() only signals the pool; join its threads so none outlives stop().
                loop.run_until_complete(loop.shutdown_default_executor())
            finally:
                loop.close()

    async def _main(self) -> None:
        self._slots = asyncio.Semaphore(self.queue_size if self.mode == "async" else 0)
        self._tasks: set[asyncio.Task[None]] = set()
        self._task_rows: dict[asyncio.Task[None], TrainingRow] = {}
        self._main_task = asyncio.current_task()
        self._ready.set()
        self.stats.busy_started = time.perf_counter()
        while not self._stopping:
            await self._slots.acquire()
            await self._admit()
            row = self._next_row()
            self.started_groups += 1
            task = asyncio.create_task(self._play_group(row), name=f"group-{row.task}-{row.index}")
            self._tasks.add(task)
            self._task_rows[task] = row
            task.add_done_callback(self._group_done)

    def _next_row(self) -> TrainingRow:
        """The next row of the stream that can start (rows that never can are skipped, see ``faults``)."""
        for _ in range(_MAX_SKIPPED_IN_A_ROW):
            row = next(self.rows)
            if not self.faults.is_unstartable(row):
                return row
            self.skipped_rows += 1
        raise RuntimeError(
            f"{_MAX_SKIPPED_IN_A_ROW} training rows in a row cannot start (their reset fails every time): "
            f"{self.faults.unstartable}. Fix the environments or the data."
        )

    async def _admit(self) -> None:
        """Wait until a new group cannot go stale before the trainer reaches it, and the run can still train it."""
        if self.mode != "async":
            return
        while not self._stopping:
            in_flight = self.started_groups - self.taken_groups - self.stats.dropped_groups
            fresh_enough = self.staleness is None or self.staleness.admits(in_flight, self.groups_per_version)
            if fresh_enough and (self.groups_left is None or in_flight < self.groups_left):
                return
            await asyncio.sleep(0.01)

    def _group_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        row = self._task_rows.pop(task, None)
        if task.cancelled() or task.exception() is None:
            return
        error = task.exception()
        if isinstance(error, InfraErrorRateExceeded):
            # The message carries the first fault's traceback; the raise site's own adds nothing.
            logger.error("stopping the rollouts: %s", error)
            if self._error is None:
                self._error = error
                self._cancel_all()
            return
        logger.warning(
            "task=%s index=%s: group failed with %r; stopping the rollouts",
            row.task if row else "?",
            row.index if row else "?",
            error,
            exc_info=error,
        )
        if self._error is None:
            self._error = error
            self._cancel_all()

    def _cancel_all(self) -> None:
        for task in list(getattr(self, "_tasks", ())):
            task.cancel()
        main = getattr(self, "_main_task", None)
        if main is not None:
            main.cancel()

    async def _shutdown(self) -> None:
        tasks = list(getattr(self, "_tasks", ()))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for engine in self.sampler.engines:
            await engine.aclose()
        await asyncio.gather(*(pool.aclose() for pool in self.pools.values()))
        current = asyncio.current_task()
        self.leaked_tasks = len([t for t in asyncio.all_tasks() if t is not current and not t.done()])

    async def _play_group(self, row: TrainingRow) -> None:
        created = self.sampler.policy.version
        try:
            # A TaskGroup, not gather: when one episode raises (e.g. the fault rate is exceeded) its siblings are
            # cancelled and awaited here, instead of being left running when the loop closes.
            async with asyncio.TaskGroup() as episodes:
                playing = [episodes.create_task(self._play_with_retries(row)) for _ in range(self.num_generations)]
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
        results = [task.result() for task in playing]
        if any(t is None for t in results):
            self.stats.dropped_groups += 1
            logger.warning("task=%s index=%d: group dropped after an infrastructure error", row.task, row.index)
            self._release_slot_now()
            return
        trajectories = [t for t in results if t is not None]
        self.stats.groups += 1
        self._groups.put(Group(row=row, trajectories=trajectories, created_version=created))
        if self.mode == "sync":
            return

    def _release_slot_now(self) -> None:
        """A dropped group gives its slot back at once (it never reaches the trainer)."""
        assert self._slots is not None
        self._slots.release()

    def _pool(self, row: TrainingRow) -> EnvPool[Any]:
        key = (row.task, row.split)
        if key not in self.pools:
            self.pools[key] = EnvPool(functools.partial(self.env_factory, row.task, row.split))
        return self.pools[key]

    async def _play_with_retries(self, row: TrainingRow) -> Trajectory | None:
        retries = 0
        while True:
            pool = self._pool(row)
            env = await pool.acquire()
            healthy = False
            try:
                trajectory = await run_episode(
                    row,
                    env,
                    tokenizer=self.tokenizer,
                    pick_engine=self.sampler.pick,
                    limits=self.limits,
                    is_lagged=self.sampler.is_lagged,
                )
                healthy = not trajectory.infra_error
            finally:
                pool.release(env, broken=not healthy)
            self.stats.episodes += 1
            self.faults.episode(row, trajectory.fault if trajectory.infra_error else None)
            self.faults.check_rate()  # raises out of the group: the producer stops with the first fault
            if not trajectory.infra_error:
                trajectory.retries = retries
                self.status_counts[trajectory.status] += 1
                return trajectory
            self.stats.infra_errors += 1
            if (
                self.infra_error_policy == "drop_group"
                or retries >= self.max_infra_retries
                or self.faults.is_unstartable(row)
            ):
                return None
            retries += 1
            self.stats.infra_retries += 1
