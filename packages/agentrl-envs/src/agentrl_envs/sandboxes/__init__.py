"""Isolated Linux systems for tasks: a persistent interactive shell and independent processes per sandbox.

Backends: :class:`BwrapBackend` (bubblewrap, the embedded default) and ``DockerBackend`` (a real Docker engine,
in :mod:`agentrl_envs.sandboxes.docker`; needs ``agentrl-envs[docker]``). See ``docs/sandboxes.md``.
"""

from agentrl_envs.sandboxes.base import WORKDIR, ExecResult, Limits, Sandbox, SandboxBackend, ShellResult
from agentrl_envs.sandboxes.bwrap import BwrapBackend

__all__ = ["WORKDIR", "BwrapBackend", "ExecResult", "Limits", "Sandbox", "SandboxBackend", "ShellResult"]
