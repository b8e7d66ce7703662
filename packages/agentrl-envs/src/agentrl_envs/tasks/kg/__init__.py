"""The AgentBench knowledge-graph task (``AgentBench/KG-v0``) over an offline Freebase graph or SPARQL."""

from agentrl_envs.tasks.kg.env import KGEnv
from agentrl_envs.tasks.kg.oracle import KGOracle

__all__ = ["KGEnv", "KGOracle"]
