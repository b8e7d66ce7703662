"""AgentBench-FC tasks as Gymnasium environments that speak OpenAI function calling.

``import agentrl_envs`` registers the ``AgentBench/*`` env ids (and the tasks installed packages declare in the
``agentrl_envs.tasks`` entry-point group); then ``gym.make("AgentBench/DB-v0")``. ``register_task`` adds one's own.
"""

from agentrl_envs.core import (
    TASKS,
    AgentRLError,
    AsyncToolEnv,
    DataError,
    EnvError,
    EnvPool,
    InfraError,
    SampleStatus,
    ToolEnv,
    Turn,
    UnknownTaskError,
    make,
    register_envs,
    register_task,
)

__version__ = "0.1.0"

register_envs()

__all__ = [
    "TASKS",
    "AgentRLError",
    "AsyncToolEnv",
    "DataError",
    "EnvError",
    "EnvPool",
    "InfraError",
    "SampleStatus",
    "ToolEnv",
    "Turn",
    "UnknownTaskError",
    "__version__",
    "make",
    "register_envs",
    "register_task",
]
