"""Isolated Linux systems for tasks: a persistent interactive shell and independent processes per sandbox.

Backends: :class:`BwrapBackend` (bubblewrap, the embedded default) and ``DockerBackend`` (a real Docker engine,
in :mod:`agentrl_envs.sandboxes.docker`; needs ``agentrl-envs[docker]``). A task's sandbox options parse into
:class:`~agentrl_envs.sandboxes.options.SandboxOptions`, which :func:`~agentrl_envs.sandboxes.options.open_sandboxes`
turns into a warm :mod:`~agentrl_envs.sandboxes.pool`; :mod:`~agentrl_envs.sandboxes.broker` serves one pool to
several processes. See ``docs/sandboxes.md``.
"""

from agentrl_envs.sandboxes.base import WORKDIR, ExecResult, Limits, Sandbox, SandboxBackend, ShellResult
from agentrl_envs.sandboxes.bwrap import BwrapBackend

__all__ = ["WORKDIR", "BwrapBackend", "ExecResult", "Limits", "Sandbox", "SandboxBackend", "ShellResult"]
