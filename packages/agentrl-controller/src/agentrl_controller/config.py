"""The controller's configuration: what it serves, where it listens, and its limits.

Loaded from YAML (or JSON) with :func:`load_config`; every model forbids unknown keys so a typo fails at
start-up instead of being ignored. With no file, :func:`default_config` serves every registered task's
splits (test, dev and train; BFCL: test) with local workers that start on first use.
"""

from __future__ import annotations

import ipaddress
import json
from pathlib import Path
from typing import Any, cast

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentrl_controller.errors import ConfigError
from agentrl_envs.core.registry import TASKS
from agentrl_envs.sandboxes.pool import PoolSettings

__all__ = [
    "AdmissionConfig",
    "ControllerConfig",
    "SandboxPoolConfig",
    "SessionConfig",
    "TaskConfig",
    "WorkerConfig",
    "default_config",
    "is_loopback",
    "load_config",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


SandboxPoolConfig = PoolSettings
"""A task's ``sandbox_pool``: the sandbox layer's own pool settings (one set of defaults with the env in process)."""


class TaskConfig(_Strict):
    """One task name served by local worker processes."""

    name: str = Field(min_length=1, max_length=200)
    """The name clients use (``dbbench-std``); upstream config names and our short names resolve to it."""
    env: str
    """A registered task name (``db``, ``AgentBench/DB-v0``) or an env class as ``module:Class``."""
    split: str | None = None
    """The split; ``None`` keeps the env's default (or the one an upstream name implies)."""
    options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Keyword options for the env (``mode``, ``backend``, ``max_rounds``...)."""
    concurrency: int = Field(default=64, ge=1, le=100_000)
    """Sessions one worker process holds at once."""
    workers: int = Field(default=1, ge=1, le=64)
    """Worker processes for this task."""
    lazy: bool = True
    """Start the workers on the first request for this task instead of at start-up."""
    aliases: list[str] = Field(default_factory=list[str])
    """Other names that reach this task (e.g. ``db`` for ``dbbench-std``)."""
    sandbox_pool: SandboxPoolConfig | None = None
    """One pool of the task's sandboxes per worker process, shared by its envs (``options.backend``: ``bwrap`` or
    ``docker``); ``None``: each env keeps its own (``options.backend_options.pool_size``, 2 by default). Only for
    envs that take a ``backend`` option (the OS task)."""


class AdmissionConfig(_Strict):
    """The queue that absorbs bursts of ``start_sample`` beyond the workers' capacity."""

    max_waiting: int = Field(default=10_000, ge=0)
    """Requests that may wait per task; one more is refused with 429."""
    timeout_s: float = Field(default=600.0, gt=0)
    """How long a request may wait for a free slot before it is refused with 429."""


class SessionConfig(_Strict):
    """Session lifetime."""

    ttl_s: float = Field(default=900.0, gt=0)
    """Idle time after which a session is cancelled; any request on it renews it."""
    sweep_interval_s: float = Field(default=5.0, gt=0)
    """How often idle sessions and stale workers are looked for."""
    finished_memory: int = Field(default=100_000, ge=0)
    """Finished sessions remembered, so a late request gets "finished" (409) rather than "unknown" (404)."""


class WorkerConfig(_Strict):
    """Worker processes and remote workers."""

    heartbeat_timeout_s: float = Field(default=30.0, gt=0)
    """A remote worker that sent no heartbeat for this long is dropped and its sessions end as task errors."""
    start_timeout_s: float = Field(default=60.0, gt=0)
    """How long a local worker process may take to become ready."""
    restart_backoff_s: float = Field(default=0.5, ge=0)
    """First delay before restarting a crashed local worker; it doubles up to ``restart_backoff_max_s``."""
    restart_backoff_max_s: float = Field(default=10.0, ge=0)
    drain_timeout_s: float = Field(default=10.0, ge=0)
    """On shutdown, how long workers get to end their sessions before they are killed."""
    request_timeout_s: float | None = Field(default=None, gt=0)
    """Read timeout for calls to a worker; ``None`` waits as long as the task takes (as upstream does)."""


class ControllerConfig(_Strict):
    """Everything ``agentrl-controller serve`` needs."""

    host: str = "127.0.0.1"
    port: int = Field(default=5020, ge=0, le=65535)
    token: str | None = Field(default=None, min_length=16)
    """Bearer token every route checks; required when ``host`` is not a loopback address."""
    max_body_bytes: int = Field(default=8 * 1024 * 1024, ge=1024)
    """Larger request bodies get 413."""
    tasks: list[TaskConfig] = Field(default_factory=list[TaskConfig])
    admission: AdmissionConfig = Field(default_factory=AdmissionConfig)
    sessions: SessionConfig = Field(default_factory=SessionConfig)
    workers: WorkerConfig = Field(default_factory=WorkerConfig)
    accept_remote_workers: bool = True
    sweep_sandboxes: bool = True
    """At start, remove the sandboxes (temp dirs, cgroups, and containers if a task uses ``docker``) whose
    owner process is gone: what workers of a killed controller left behind."""
    """Accept ``receive_heartbeat`` registrations (upstream ``agentrl-worker`` and ours on other hosts)."""

    @model_validator(mode="after")
    def _check(self) -> ControllerConfig:
        if not is_loopback(self.host) and self.token is None:
            raise ValueError(
                f"host {self.host!r} is not a loopback address: set a bearer token (token: ..., at least 16 "
                "characters, or --token / $AGENTRL_CONTROLLER_TOKEN) so that other hosts cannot drive the controller."
            )
        seen: dict[str, str] = {}
        for task in self.tasks:
            for name in (task.name, *task.aliases):
                if name in seen:
                    raise ValueError(f"task name {name!r} is used twice (by {seen[name]!r} and {task.name!r}).")
                seen[name] = task.name
        return self

    def task(self, name: str) -> TaskConfig | None:
        """The task config reached by ``name`` (its name or an alias)."""
        for task in self.tasks:
            if name == task.name or name in task.aliases:
                return task
        return None


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_tasks() -> list[TaskConfig]:
    """Every implemented task under its upstream names; the short name is an alias of the test split."""
    tasks: list[TaskConfig] = []
    for spec in TASKS.values():
        if spec.entry_point is None:
            continue
        for split in spec.splits:
            aliases = [spec.short_name] if split == "test" else []
            tasks.append(TaskConfig(name=spec.upstream_name(split), env=spec.short_name, split=split, aliases=aliases))
    return tasks


def default_config(**overrides: Any) -> ControllerConfig:
    """The configuration used without a file: every registered task, local lazy workers."""
    try:
        return ControllerConfig.model_validate({"tasks": default_tasks(), **overrides})
    except ValidationError as e:
        raise ConfigError(f"Invalid controller settings: {e}") from e


def load_config(path: str | Path, **overrides: Any) -> ControllerConfig:
    """Read a YAML/JSON config file; ``overrides`` (e.g. ``host``, ``port`` from the CLI) win over it.

    A file without a ``tasks`` key serves the default tasks.

    Raises:
        ConfigError: If the file is missing, unreadable or invalid; the message names the bad field.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"Controller config {path} does not exist.")
    try:
        text = path.read_text(encoding="utf-8")
        raw = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise ConfigError(f"Could not read controller config {path}: {e}") from e
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"Controller config {path} must be a mapping, got {type(raw).__name__}.")
    raw = cast(dict[str, Any], raw)
    if "tasks" not in raw:
        raw["tasks"] = [t.model_dump() for t in default_tasks()]
    raw.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return ControllerConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(f"Invalid controller config {path}:\n{e}") from e
