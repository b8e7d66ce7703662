from __future__ import annotations

import gymnasium as gym
import pytest

from agentrl_envs import AsyncToolEnv, SampleStatus
from agentrl_envs.client import RemoteEnv
from agentrl_envs.core.status import LIMIT_STATUSES, TERMINATED_STATUSES

from .toy_env import ToyEnv


def test_tool_envs_and_the_remote_env_are_async_tool_envs():
    env = ToyEnv(split="test")
    try:
        assert isinstance(env, AsyncToolEnv)
    finally:
        env.close()
    assert issubclass(RemoteEnv, AsyncToolEnv)


def test_a_plain_gymnasium_env_is_not_one():
    env = gym.make("CartPole-v1").unwrapped
    assert not isinstance(env, AsyncToolEnv)  # no areset/astep/num_samples


@pytest.mark.parametrize("status", list(SampleStatus))
def test_each_status_is_its_agentbench_string_and_ends_one_way(status: SampleStatus):
    assert status == status.value and f"{status}" == status.value  # a StrEnum: JSON and logs see the string
    if status is SampleStatus.RUNNING:
        assert not status.is_terminal and not status.is_terminated
    else:
        assert status.is_terminal
    assert status.is_terminated == (status in TERMINATED_STATUSES)
    assert not (status in TERMINATED_STATUSES and status in LIMIT_STATUSES)


def test_terminated_statuses_are_the_agents_own_endings():
    assert {str(s) for s in TERMINATED_STATUSES} == {"completed", "agent invalid action", "agent validation failed"}
    assert {str(s) for s in LIMIT_STATUSES} == {"task limit reached", "agent context limit"}
