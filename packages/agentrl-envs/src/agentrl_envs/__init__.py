"""AgentBench-FC tasks as Gymnasium environments that speak OpenAI function calling.

``import agentrl_envs`` registers the ``AgentBench/*`` env ids; then ``gym.make("AgentBench/DB-v0")``.
"""

from agentrl_envs.core import (
    TASKS,
    AgentRLError,
    DataError,
    EnvError,
    InfraError,
    SampleStatus,
    ToolEnv,
    UnknownTaskError,
    make,
    register_envs,
)

__version__ = "0.1.0"

register_envs()

__all__ = [
    "TASKS",
    "AgentRLError",
    "DataError",
    "EnvError",
    "InfraError",
    "SampleStatus",
    "ToolEnv",
    "UnknownTaskError",
    "__version__",
    "make",
    "register_envs",
]
