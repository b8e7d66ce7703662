"""Run evaluation episodes concurrently with asyncio.

Every ``(task, index, run)`` is one job on a shared queue. ``concurrency`` workers take jobs; each borrows an
environment of the job's task from that task's :class:`~agentrl_envs.core.pool.EnvPool` (at most ``concurrency``
envs per task, each reused across episodes through ``areset``/``astep``) and an agent of its own for that task. An
environment fault (an :class:`~agentrl_envs.core.errors.InfraError` from ``reset``, ``info["infra_error"]``) is
recorded as such and never counted against the agent; the env is replaced and the run goes on. Cancelling
:meth:`run` (Ctrl-C) stops the workers; the finished episodes stay in :attr:`Evaluation.records`. Episodes listed
in ``skip`` (``--resume``: those an earlier run finished) are not played again.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, cast

import gymnasium as gym

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import EnvError, InfraError
from agentrl_envs.core.pool import EnvPool
from agentrl_envs.core.protocols import AsyncToolEnv
from agentrl_envs.core.registry import make
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.eval.agents import Agent, AgentFactory, AgentTurn
from agentrl_envs.eval.errors import AgentConfigError, AgentStop
from agentrl_envs.eval.records import EpisodeKey, EpisodeRecord, TurnLog

__all__ = ["Evaluation", "TaskEnvInfo", "TaskPlan"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class TaskPlan:
    """One task of an evaluation: which env to make and which samples to play."""

    name: str
    """The task's short name (the key in ``results.json``)."""
    split: str = "test"
    env_options: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments of ``make`` besides ``split`` (``data_root``, ``backend``, ...)."""
    indices: tuple[int, ...] | None = None
    """Sample indices to play; ``None`` plays the whole split."""
    limit: int | None = None
    """Play only the first ``limit`` of those samples."""

    def select(self, num_samples: int) -> list[int]:
        """The sample indices to play, checked against the split's size.

        Raises:
            EnvError: If an index is out of range.
        """
        indices = list(self.indices) if self.indices is not None else list(range(num_samples))
        bad = [i for i in indices if not 0 <= i < num_samples]
        if bad:
            raise EnvError(
                f"Indices {bad} are out of range for {self.name}/{self.split}: it has {num_samples} samples "
                f"(0..{num_samples - 1})."
            )
        return indices[: self.limit] if self.limit is not None else indices


@dataclass(frozen=True)
class TaskEnvInfo:
    """What a task's first env said about it, read once when the evaluation starts."""

    num_samples: int
    """The split's size."""
    fidelity: str | None
    """``upstream``/``emulated``, where the env says (a ToolEnv does; a RemoteEnv learns it per episode)."""
    backend: str | None
    """The env's backend, for tasks that have several."""
    data: DataRoot | None
    """The data root the env read (``None``: it read none, or it runs on a controller)."""

    @classmethod
    def of(cls, env: AsyncToolEnv) -> TaskEnvInfo:
        """Read an unwrapped env."""
        return cls(
            num_samples=env.num_samples(),
            fidelity=getattr(env, "fidelity", None),
            backend=getattr(env, "backend_name", None),
            data=getattr(env, "data_in_use", None),
        )


class Evaluation:
    """Plays ``runs`` episodes of every selected sample of every task."""

    def __init__(
        self,
        plans: list[TaskPlan],
        agent_factory: AgentFactory,
        *,
        concurrency: int = 1,
        runs: int = 1,
        on_episode: Callable[[EpisodeRecord], None] | None = None,
        skip: Collection[EpisodeKey] = (),
    ) -> None:
        """Set up an evaluation.

        Args:
            plans: The tasks and their samples.
            agent_factory: Builds an agent for ``(task, split)``; called once per worker and task.
            concurrency: Episodes in flight at once (and the most envs per task).
            runs: How many times each sample is played.
            on_episode: Called with each finished episode (e.g. to stream it to disk and advance a progress bar).
            skip: Episodes ``(task, split, index, run)`` not to play (an earlier run finished them).
        """
        if concurrency < 1:
            raise EnvError(f"concurrency must be at least 1, got {concurrency}.")
        if runs < 1:
            raise EnvError(f"runs must be at least 1, got {runs}.")
        self.plans = plans
        self.agent_factory = agent_factory
        self.concurrency = concurrency
        self.runs = runs
        self.on_episode = on_episode
        self.skip = frozenset(skip)
        self.records: list[EpisodeRecord] = []
        self.jobs: list[tuple[TaskPlan, int, int]] = []
        self.samples: dict[str, set[int]] = {}
        self.pools: dict[str, EnvPool[gym.Env]] = {}
        """Each task's envs: at most ``concurrency``, each reused across episodes."""
        self.task_envs: dict[str, TaskEnvInfo] = {}

    @property
    def total(self) -> int:
        """How many episodes the evaluation plays (known after :meth:`prepare`)."""
        return len(self.jobs)

    def planned_samples(self) -> dict[str, int]:
        """How many distinct samples each task plays (``n`` in ``results.json``), known after :meth:`prepare`."""
        return {plan.name: len(self.samples.get(plan.name, ())) for plan in self.plans}

    async def prepare(self) -> None:
        """Make one env per task and list the jobs.

        Raises:
            EnvError: For a wrong option or index (nothing has run yet).
            InfraError: If a task's environment cannot be made at all.
        """
        for plan in self.plans:
            if plan.name not in self.pools:
                await self._open(plan)
            indices = plan.select(self.task_envs[plan.name].num_samples)
            self.samples[plan.name] = set(indices)
            self.jobs += [
                (plan, index, run)
                for run in range(self.runs)
                for index in indices
                if (plan.name, plan.split, index, run) not in self.skip
            ]

    async def _open(self, plan: TaskPlan) -> None:
        """Make the task's first env, which tells the split's size; a wrong option fails here, before any episode."""
        make_env = functools.partial(make, plan.name, split=plan.split, **plan.env_options)
        pool = EnvPool(make_env, size=self.concurrency)
        try:
            env = await pool.acquire()
        except EnvError:
            raise
        except (TypeError, ValueError) as e:  # gym.make's way of refusing an option the task does not take
            raise EnvError(f"Could not make {plan.name}/{plan.split} with options {plan.env_options}: {e}") from e
        try:
            inner = env.unwrapped
            if not isinstance(inner, AsyncToolEnv):
                raise EnvError(f"{plan.name}: {type(inner).__name__} has no areset/astep/num_samples to evaluate.")
            self.task_envs[plan.name] = TaskEnvInfo.of(inner)
        finally:
            pool.release(env)
        self.pools[plan.name] = pool

    async def run(self) -> list[EpisodeRecord]:
        """Play every job; returns the records (also in :attr:`records`) in the order episodes finished."""
        if not self.pools:
            await self.prepare()
        queue: asyncio.Queue[tuple[TaskPlan, int, int]] = asyncio.Queue()
        for job in self.jobs:
            queue.put_nowait(job)
        workers = [asyncio.create_task(self._worker(queue)) for _ in range(min(self.concurrency, len(self.jobs)))]
        try:
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await asyncio.gather(*(pool.aclose() for pool in self.pools.values()))
        return self.records

    async def _worker(self, queue: asyncio.Queue[tuple[TaskPlan, int, int]]) -> None:
        agents: dict[str, Agent] = {}
        while not queue.empty():
            plan, index, run = queue.get_nowait()
            if plan.name not in agents:
                agents[plan.name] = self.agent_factory(plan.name, plan.split)
            record = await self._play(plan, agents[plan.name], index, run)
            self.records.append(record)
            if self.on_episode is not None:
                self.on_episode(record)

    async def _play(self, plan: TaskPlan, agent: Agent, index: int, run: int) -> EpisodeRecord:
        record = EpisodeRecord(task=plan.name, split=plan.split, index=index, run=run)
        record.timings = {"started_at": time.time(), "reset_s": 0.0, "agent_s": [], "env_s": [], "total_s": 0.0}
        started = time.perf_counter()
        try:
            env = await self.pools[plan.name].acquire()
        except InfraError as e:
            _end(record, SampleStatus.TASK_ERROR, error=f"could not make the environment: {e}", infra_error=True)
        else:
            try:
                inner = cast(AsyncToolEnv, env.unwrapped)  # the pool's start() checked its first one
                await Episode(inner, agent, record).play()
            finally:
                self.pools[plan.name].release(env, broken=record.infra_error)
        record.timings["total_s"] = time.perf_counter() - started
        return record


class Episode:
    """One episode between an environment and an agent, recorded into an :class:`EpisodeRecord`."""

    def __init__(self, env: AsyncToolEnv, agent: Agent, record: EpisodeRecord) -> None:
        """Pair an unwrapped env (with ``areset``/``astep``) and an agent for ``record``'s sample."""
        self.env = env
        self.agent = agent
        self.record = record
        self.tools: list[dict[str, Any]] = []
        """The tools offered now: from the latest ``info`` (a task may add tools mid-episode, as BFCL's miss_func)."""

    async def play(self) -> None:
        """Reset, then alternate agent and env until the env ends the episode or the agent stops."""
        record = self.record
        began = time.perf_counter()
        try:
            observation, info = await self.env.areset(options={"index": record.index})
        except InfraError as e:
            _end(record, SampleStatus.TASK_ERROR, error=str(e), infra_error=True)
            return
        record.timings["reset_s"] = time.perf_counter() - began
        record.messages = list(observation)
        self._observe(info)
        if not await self._ask(self.agent.begin(record.task, record.index, run=record.run)):
            return
        while record.status == SampleStatus.RUNNING:
            began = time.perf_counter()
            turn = await self._ask(self.agent.act(list(record.messages), self.tools))
            if turn is None:
                return
            if turn is True:  # act() returned None, which is no message to play
                _end(record, SampleStatus.CANCELLED, error="the agent's act() returned None instead of a message")
                return
            record.timings["agent_s"].append(time.perf_counter() - began)
            if isinstance(turn, AgentTurn):
                action = turn.message
                record.turns.append(TurnLog(turn.model, turn.prompt_tokens, turn.completion_tokens))
            else:
                action = turn
                record.turns.append(TurnLog())
            record.messages.append(action)
            await self._step(action)

    async def _ask(self, call: Awaitable[T]) -> T | Literal[True] | None:
        """Await an agent call; ``None`` if the agent stopped the episode (recorded), else its result or ``True``."""
        record = self.record
        try:
            result = await call
        except AgentStop as e:
            _end(record, e.status, error=f"{type(e).__name__}: {e}")
            return None
        except AgentConfigError:
            raise
        except Exception as e:  # episode boundary: an agent bug ends this episode, visibly, not the evaluation
            logger.exception("%s sample %s: the agent failed", record.task, record.index)
            _end(record, SampleStatus.CANCELLED, error=f"agent crashed: {type(e).__name__}: {e}")
            return None
        return True if result is None else result

    async def _step(self, action: dict[str, Any]) -> None:
        record = self.record
        began = time.perf_counter()
        try:
            observation, reward, terminated, truncated, info = await self.env.astep(action)
        except Exception as e:  # episode boundary: ToolEnv already reports its faults in info; this is a worse one
            logger.exception("%s sample %s: step raised", record.task, record.index)
            _end(record, SampleStatus.TASK_ERROR, error=f"step raised {type(e).__name__}: {e}", infra_error=True)
            return
        record.timings["env_s"].append(time.perf_counter() - began)
        record.messages.extend(observation)
        record.rewards.append(float(reward))
        self._observe(info)
        if info.get("infra_error"):
            error = str(info.get("error", "infrastructure error"))
            _end(record, SampleStatus.TASK_ERROR, error=error, infra_error=True)
        elif terminated or truncated:
            record.status = SampleStatus(info.get("status", SampleStatus.COMPLETED))

    def _observe(self, info: dict[str, Any]) -> None:
        self.tools = info.get("tools") or self.tools
        self.record.info = {key: value for key, value in info.items() if key != "tools"}
        self.record.score = float(info.get("score") or 0.0)


def _end(record: EpisodeRecord, status: SampleStatus, *, error: str, infra_error: bool = False) -> None:
    record.status = status
    record.error = error
    record.infra_error = infra_error
