"""Evaluate agents on the AgentBench tasks: agents, a concurrent runner, reports and the ``agentrl-eval`` CLI."""

from agentrl_envs.eval.agents import Agent, AgentFactory, AgentTurn, MixedAgent, OracleAgent, RandomAgent
from agentrl_envs.eval.errors import (
    AgentConfigError,
    AgentContextLimitError,
    AgentStop,
    AgentUnavailableError,
    AgentValidationError,
)
from agentrl_envs.eval.openai_agent import OpenAIAgent, OpenAIChatClient, RetryPolicy
from agentrl_envs.eval.records import EpisodeRecord, TurnLog
from agentrl_envs.eval.report import pass_at_k, summarize, write_results
from agentrl_envs.eval.runner import Evaluation, TaskPlan

__all__ = [
    "Agent",
    "AgentConfigError",
    "AgentContextLimitError",
    "AgentFactory",
    "AgentStop",
    "AgentTurn",
    "AgentUnavailableError",
    "AgentValidationError",
    "EpisodeRecord",
    "Evaluation",
    "MixedAgent",
    "OpenAIAgent",
    "OpenAIChatClient",
    "OracleAgent",
    "RandomAgent",
    "RetryPolicy",
    "TaskPlan",
    "TurnLog",
    "pass_at_k",
    "summarize",
    "write_results",
]
