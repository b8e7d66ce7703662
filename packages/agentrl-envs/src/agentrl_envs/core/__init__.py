"""The environment SDK shared by every task: messages, tools, spaces, the ``ToolEnv`` base, data, registry, env pool."""

from agentrl_envs.core.data import DataRoot, resolve_cache_dir, resolve_data_root
from agentrl_envs.core.env import ToolEnv, Turn, parse_text_tool_calls
from agentrl_envs.core.errors import (
    AgentRLError,
    BackendUnavailableError,
    DataError,
    EnvError,
    InfraError,
    UnknownTaskError,
)
from agentrl_envs.core.messages import AssistantMessage, FunctionCall, Message, ToolCall, parse_action
from agentrl_envs.core.oracle import Oracle, load_oracle
from agentrl_envs.core.pool import EnvPool, close_quietly
from agentrl_envs.core.protocols import AsyncToolEnv, EnvFactory
from agentrl_envs.core.registry import TASKS, TaskSpec, make, register_envs, register_task, resolve_task
from agentrl_envs.core.spaces import ActionSpace, MessagesSpace
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.core.tools import CheckedCall, ToolBox, ToolCallError

__all__ = [
    "TASKS",
    "ActionSpace",
    "AgentRLError",
    "AssistantMessage",
    "AsyncToolEnv",
    "BackendUnavailableError",
    "CheckedCall",
    "DataError",
    "DataRoot",
    "EnvError",
    "EnvFactory",
    "EnvPool",
    "FunctionCall",
    "InfraError",
    "Message",
    "MessagesSpace",
    "Oracle",
    "SampleStatus",
    "TaskSpec",
    "ToolBox",
    "ToolCall",
    "ToolCallError",
    "ToolEnv",
    "Turn",
    "UnknownTaskError",
    "close_quietly",
    "load_oracle",
    "make",
    "parse_action",
    "parse_text_tool_calls",
    "register_envs",
    "register_task",
    "resolve_cache_dir",
    "resolve_data_root",
    "resolve_task",
]
