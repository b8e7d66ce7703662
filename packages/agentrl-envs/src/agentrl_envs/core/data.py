"""Where benchmark data is read from and where generated assets go.

The **data root** is laid out like the upstream AgentBench repository (``data/...``, ``configs/tasks/*.yaml``,
``prompts.json``). It is resolved from the ``data_root=`` argument, then ``AGENTRL_DATA_ROOT``, then
``<cache dir>/agentbench``. The **cache dir** (``AGENTRL_CACHE_DIR``, default ``~/.cache/agentrl``) holds
assets generated from the data; they are deterministic and rebuilt when their inputs change.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from agentrl_envs.core.errors import DataError

__all__ = ["DataRoot", "read_json", "read_jsonl", "resolve_cache_dir", "resolve_data_root"]

DATA_ROOT_ENV = "AGENTRL_DATA_ROOT"
CACHE_DIR_ENV = "AGENTRL_CACHE_DIR"


def resolve_cache_dir() -> Path:
    """The directory for generated assets (created if missing)."""
    path = Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "agentrl").expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve_data_root(data_root: str | os.PathLike[str] | None = None) -> Path:
    """Find the AgentBench data root.

    Args:
        data_root: An explicit path; wins over the environment variable and the default.

    Raises:
        DataError: If no candidate holds ``prompts.json``; the message lists what was tried.
    """
    candidates: list[tuple[str, Path]] = []
    if data_root is not None:
        candidates.append(("data_root argument", Path(data_root)))
    elif os.environ.get(DATA_ROOT_ENV):
        candidates.append((f"${DATA_ROOT_ENV}", Path(os.environ[DATA_ROOT_ENV])))
    else:
        candidates.append(("default", resolve_cache_dir() / "agentbench"))
    for _, path in candidates:
        path = path.expanduser()
        if (path / "prompts.json").is_file():
            return path.resolve()
    tried = ", ".join(f"{how}: {path}" for how, path in candidates)
    raise DataError(
        f"No AgentBench data root found ({tried}). A data root is laid out like the AgentBench repository "
        f"(data/, configs/tasks/, prompts.json). Pass data_root=... or set {DATA_ROOT_ENV}."
    )


@dataclass(frozen=True)
class DataRoot:
    """Typed access to the files of a data root."""

    path: Path

    @classmethod
    def find(cls, data_root: str | os.PathLike[str] | None = None) -> DataRoot:
        """Resolve the data root (see :func:`resolve_data_root`)."""
        return cls(resolve_data_root(data_root))

    def file(self, relative: str) -> Path:
        """A file under the data root, which must exist."""
        path = self.path / relative
        if not path.exists():
            raise DataError(f"{relative} is missing from the data root {self.path}.")
        return path

    def prompts(self, task_key: str) -> dict[str, Any]:
        """The text constants of one upstream task (``prompts.json`` → ``tasks`` → ``task_key``)."""
        tasks = _read_json(self.file("prompts.json"))["tasks"]
        if task_key not in tasks:
            raise DataError(f"prompts.json has no entry {task_key!r}; it has {sorted(tasks)}.")
        return tasks[task_key]

    def task_config(self, config_name: str) -> dict[str, Any]:
        """An upstream task config, ``configs/tasks/<config_name>.yaml``, as a dict of sections."""
        return _read_yaml(self.file(f"configs/tasks/{config_name}.yaml"))

    def json(self, relative: str) -> Any:
        """A JSON file under the data root (cached)."""
        return _read_json(self.file(relative))

    def jsonl(self, relative: str) -> list[Any]:
        """A JSONL file under the data root (cached)."""
        return read_jsonl(self.file(relative))


def read_jsonl(path: str | os.PathLike[str]) -> list[Any]:
    """Read a JSONL file (cached by path and modification time)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"JSONL file not found: {path}")
    return _read_jsonl_cached(path.resolve(), path.stat().st_mtime_ns)


def read_json(path: str | os.PathLike[str]) -> Any:
    """Read a JSON file (cached by path and modification time)."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"JSON file not found: {path}")
    return _read_json(path)


def _read_json(path: Path) -> Any:
    return _read_json_cached(path.resolve(), path.stat().st_mtime_ns)


def _read_yaml(path: Path) -> Any:
    return _read_yaml_cached(path.resolve(), path.stat().st_mtime_ns)


@cache
def _read_json_cached(path: Path, mtime_ns: int) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{path} is not valid JSON: {e}") from e


@cache
def _read_jsonl_cached(path: Path, mtime_ns: int) -> list[Any]:
    rows = []
    with path.open(encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise DataError(f"{path}:{number} is not valid JSON: {e}") from e
    return rows


@cache
def _read_yaml_cached(path: Path, mtime_ns: int) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise DataError(f"{path} is not valid YAML: {e}") from e
