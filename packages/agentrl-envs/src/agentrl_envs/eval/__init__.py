"""Evaluate agents on the AgentBench tasks: agents, a concurrent runner, reports and the ``agentrl-eval`` CLI."""

from agentrl_envs.eval.agents import Agent, AgentFactory, OracleAgent, RandomAgent
from agentrl_envs.eval.errors import (
    AgentConfigError,
    AgentContextLimitError,
    AgentStop,
    AgentUnavailableError,
    AgentValidationError,
)
from agentrl_envs.eval.openai_agent import OpenAIAgent, OpenAIChatClient, RetryPolicy
from agentrl_envs.eval.records import EpisodeRecord
from agentrl_envs.eval.report import summarize, write_results
from agentrl_envs.eval.runner import Evaluation, TaskPlan

__all__ = [
    "Agent",
    "AgentConfigError",
    "AgentContextLimitError",
    "AgentFactory",
    "AgentStop",
    "AgentUnavailableError",
    "AgentValidationError",
    "EpisodeRecord",
    "Evaluation",
    "OpenAIAgent",
    "OpenAIChatClient",
    "OracleAgent",
    "RandomAgent",
    "RetryPolicy",
    "TaskPlan",
    "summarize",
    "write_results",
]
