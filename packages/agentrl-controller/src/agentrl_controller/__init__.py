"""AgentRL controller: hosts environment workers and routes sessions to them behind the AgentRL API.

The public names are imported on first use, so a worker process (``agentrl_controller.workers.local``) does
not pay for the web framework and metrics it never uses.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentrl_controller.api.app import create_app
    from agentrl_controller.config import ControllerConfig, TaskConfig, default_config, load_config
    from agentrl_controller.controller import Controller

__version__ = "0.1.0"

__all__ = ["Controller", "ControllerConfig", "TaskConfig", "__version__", "create_app", "default_config", "load_config"]

_WHERE = {
    "Controller": "agentrl_controller.controller",
    "ControllerConfig": "agentrl_controller.config",
    "TaskConfig": "agentrl_controller.config",
    "create_app": "agentrl_controller.api.app",
    "default_config": "agentrl_controller.config",
    "load_config": "agentrl_controller.config",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'agentrl_controller' has no attribute {name!r}")
