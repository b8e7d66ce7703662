import asyncio
import json

import pytest

from agentrl_envs.core import EnvError, SampleStatus
from agentrl_envs.eval import Evaluation, OpenAIAgent, OpenAIChatClient, OracleAgent, RandomAgent, RetryPolicy, TaskPlan
from agentrl_envs.eval.agents import new_messages
from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.eval.report import summarize

from .openai_server import Canned, FakeOpenAIServer
from .toy_task import FLAKY_START, FLAKY_STEP, call, sample_index


def oracle_factory(task: str, split: str) -> OracleAgent:
    return OracleAgent(task, split=split)


async def test_oracle_agent_wins_every_sample(toy: str) -> None:
    evaluation = Evaluation([TaskPlan(toy)], oracle_factory, concurrency=3)
    records = await evaluation.run()
    assert sorted(r.index for r in records) == [0, 1, 2, 3, 4]
    assert all(r.success and r.status == "completed" and r.reward == 1.0 for r in records)
    record = records[0]
    assert [m["role"] for m in record.messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert [c["function"]["name"] for c in record.tool_calls] == ["echo", "answer"]
    assert len(record.timings["agent_s"]) == len(record.timings["env_s"]) == 2
    assert record.info["backend"] == "ok" and "tools" not in record.info


async def test_envs_are_reused_and_bounded_by_concurrency(toy: str) -> None:
    evaluation = Evaluation([TaskPlan(toy)], oracle_factory, concurrency=2, runs=3)
    await evaluation.run()
    assert len(evaluation.records) == 15
    assert evaluation.pools[toy].created <= 2


async def test_random_agent_runs_without_raising_and_is_seeded(toy: str) -> None:
    first, second = (
        Evaluation([TaskPlan(toy)], lambda t, s: RandomAgent(seed=7), concurrency=2, runs=2) for _ in range(2)
    )
    await first.run()
    await second.run()
    assert len(first.records) == 10
    assert all(r.status != "running" and not r.infra_error for r in first.records)
    key = lambda r: (r.index, r.run)  # noqa: E731
    transcripts = [[r.messages for r in sorted(e.records, key=key)] for e in (first, second)]
    assert transcripts[0] == transcripts[1]


async def test_infra_errors_are_recorded_as_infra_not_agent_failures(toy: str) -> None:
    plan = TaskPlan(toy, env_options={"backend": "flaky"}, indices=(0, FLAKY_START, FLAKY_STEP, 3))
    records = {r.index: r for r in await Evaluation([plan], oracle_factory, concurrency=2).run()}
    assert records[0].success and records[3].success
    for index in (FLAKY_START, FLAKY_STEP):
        assert records[index].infra_error and records[index].status == "task error"
    assert "refused the connection" in records[FLAKY_START].error
    assert "went away" in records[FLAKY_STEP].error
    figures = summarize(records.values(), {toy: 4}, runs=1)["tasks"][toy]
    assert figures["success_rate"] == 1.0 and figures["infra_errors"] == 2
    assert figures["status_counts"] == {"completed": 2, "task error": 2}


class RightOnFirstRun:
    """Answers right on run 0 and wrong on run 1: success rates 1.0 and 0.0 across runs."""

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        self.run = run

    async def act(self, messages: list[dict], tools: list[dict]) -> dict:
        return call("answer", value=sample_index(messages) + self.run)


async def test_runs_give_mean_and_std(toy: str) -> None:
    evaluation = Evaluation([TaskPlan(toy, limit=4)], lambda t, s: RightOnFirstRun(), runs=2)
    results = summarize(await evaluation.run(), evaluation.planned_samples(), runs=2)
    figures = results["tasks"][toy]
    assert figures["n"] == 4 and figures["runs"] == 2 and figures["episodes"] == 8
    assert figures["run_success_rates"] == [1.0, 0.0]
    assert figures["success_rate"] == 0.5 and figures["std"] == 0.5 and figures["mean_reward"] == 0.5
    assert results["average"] == 0.5


async def test_openai_agent_end_to_end(toy: str, openai_server: FakeOpenAIServer) -> None:
    openai_server.script(
        Canned(429, '{"error": "rate limited"}', {"Retry-After": "0"}),
        Canned(200, "<html>bad gateway</html>"),
    )
    retry = RetryPolicy(max_retries=2, backoff_s=0.01)
    async with OpenAIChatClient(base_url=openai_server.base_url, model="toy", retry=retry) as client:
        evaluation = Evaluation([TaskPlan(toy)], lambda t, s: OpenAIAgent(client), concurrency=3)
        records = await evaluation.run()
    assert len(records) == 5 and all(r.success for r in records)
    assert len(openai_server.requests) == 5 * 2 + 2
    last = max(openai_server.requests, key=lambda body: len(body["messages"]))
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "tool"]
    assert last["messages"][2]["tool_calls"][0]["function"]["name"] == "echo"


async def test_agent_stop_ends_only_its_episode(toy: str, openai_server: FakeOpenAIServer) -> None:
    openai_server.script(*[Canned(200, "not json")] * 2)
    retry = RetryPolicy(max_retries=1, backoff_s=0.01)
    async with OpenAIChatClient(base_url=openai_server.base_url, model="toy", retry=retry) as client:
        evaluation = Evaluation([TaskPlan(toy, indices=(0, 1))], lambda t, s: OpenAIAgent(client))
        records = {r.index: r for r in await evaluation.run()}
    assert records[0].status == "agent validation failed" and not records[0].infra_error
    assert "not JSON" in records[0].error
    assert records[1].success


async def test_cancelling_keeps_finished_episodes(toy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOY_ORACLE_DELAY_S", "0.05")
    evaluation = Evaluation([TaskPlan(toy)], oracle_factory, runs=10)
    task = asyncio.create_task(evaluation.run())
    while len(evaluation.records) < 2:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert 2 <= len(evaluation.records) < 50 and all(r.success for r in evaluation.records)


async def test_out_of_range_indices_fail_before_any_episode(toy: str) -> None:
    with pytest.raises(EnvError, match=r"Indices \[7\] are out of range for toy/test: it has 5 samples"):
        await Evaluation([TaskPlan(toy, indices=(0, 7))], oracle_factory).prepare()


def test_new_messages_are_those_after_the_last_assistant_message() -> None:
    history = [{"role": "system"}, {"role": "user"}, {"role": "assistant"}, {"role": "tool", "content": "x"}]
    assert new_messages(history) == [{"role": "tool", "content": "x"}]
    assert new_messages(history[:2]) == history[:2]


class CrashesOnSampleOne:
    """An agent with a bug: it fails to begin sample 1 and to act on sample 2."""

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        if index == 1:
            raise KeyError("no gold answer")
        self.index = index

    async def act(self, messages: list[dict], tools: list[dict]) -> dict:
        if self.index == 2:
            raise ZeroDivisionError("oops")
        return call("answer", value=self.index)


async def test_an_agent_bug_ends_its_episode_as_cancelled_and_counts_against_it(toy: str) -> None:
    evaluation = Evaluation([TaskPlan(toy, indices=(0, 1, 2))], lambda t, s: CrashesOnSampleOne())
    records = {r.index: r for r in await evaluation.run()}
    assert records[0].success
    assert records[1].status == records[2].status == "cancelled"
    assert "KeyError" in records[1].error and "ZeroDivisionError" in records[2].error
    assert not records[1].infra_error
    assert summarize(records.values(), {toy: 3}, runs=1)["tasks"][toy]["success_rate"] == 1 / 3


class SaysNothing:
    """An agent whose act() returns None, which is no message to play."""

    async def begin(self, task: str, index: int, *, run: int = 0) -> None:
        pass

    async def act(self, messages: list[dict], tools: list[dict]) -> None:
        return None


async def test_an_agent_that_returns_no_message_is_cancelled_not_an_infra_error(toy: str) -> None:
    records = await Evaluation([TaskPlan(toy, indices=(0,))], lambda t, s: SaysNothing()).run()
    assert records[0].status is SampleStatus.CANCELLED
    assert not records[0].infra_error
    assert "returned None" in (records[0].error or "")


async def test_records_carry_sample_statuses_through_json(toy: str) -> None:
    records = await Evaluation([TaskPlan(toy, indices=(0,))], oracle_factory).run()
    assert records[0].status is SampleStatus.COMPLETED
    again = EpisodeRecord.from_json(json.loads(json.dumps(records[0].to_json())))
    assert again.status is SampleStatus.COMPLETED and again.is_finished
