"""Where benchmark data is read from and where generated assets go.

The **data root** is laid out like the upstream AgentBench repository (``data/...``, ``configs/tasks/*.yaml``) plus
``prompts.json``, the texts derived from upstream's task code. It is resolved from the ``data_root=`` argument
(``--data-root`` on the command line), then ``AGENTRL_DATA_ROOT``, then the cache,
``<cache dir>/agentbench/<pinned commit>``, which :mod:`agentrl_envs.data` fetches on first use unless
``AGENTRL_OFFLINE=1``. The **cache dir** (``AGENTRL_CACHE_DIR``, default ``~/.cache/agentrl``) also holds assets
generated from the data; they are deterministic and rebuilt when their inputs change.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from agentrl_envs.core.cache import resolve_cache_dir  # here too: the callers' one place for data and cache
from agentrl_envs.core.errors import DataError

__all__ = ["DataRoot", "read_json", "read_jsonl", "resolve_cache_dir", "resolve_data_root"]

DATA_ROOT_ENV = "AGENTRL_DATA_ROOT"


def resolve_data_root(data_root: str | os.PathLike[str] | None = None) -> Path:
    """Find the AgentBench data root: ``data_root``, else ``$AGENTRL_DATA_ROOT``, else the cache (fetched on first use).

    Args:
        data_root: An explicit path; wins over the environment variable and the cache.

    Raises:
        DataError: If the chosen path holds no ``prompts.json``, or the cache is empty and cannot be fetched;
            the message says how to get one.
    """
    if data_root is not None:
        return _checked(Path(data_root), "the data_root argument (--data-root)")
    if os.environ.get(DATA_ROOT_ENV):
        return _checked(Path(os.environ[DATA_ROOT_ENV]), f"${DATA_ROOT_ENV}")
    from agentrl_envs.data.fetch import cached_data_root  # the fetcher builds on this module

    return cached_data_root()


def _checked(path: Path, how: str) -> Path:
    path = path.expanduser()
    if (path / "prompts.json").is_file():
        return path.resolve()
    raise DataError(
        f"No AgentBench data root at {path} (from {how}): it has no prompts.json. A data root is built by "
        "`agentrl-envs data fetch` (downloads the pinned AgentBench commit; --from FILE_OR_URL for a mirror) or "
        "`agentrl-envs data import CHECKOUT`; then pass its path as data_root=... / --data-root, set "
        f"{DATA_ROOT_ENV}, or leave both unset to use the cache."
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
        """A file under the data root, which must exist.

        Raises:
            DataError: If it does not; for a root built from a source that lacked the file, the message says so
                and how to get a complete one.
        """
        path = self.path / relative
        if not path.exists():
            raise DataError(f"{relative} is missing from the data root {self.path}{self._why_missing(relative)}.")
        return path

    def _why_missing(self, relative: str) -> str:
        from agentrl_envs.data.build import read_info  # the builder depends on this module

        info = read_info(self.path)
        if info is None or relative not in info.missing:
            return ""
        return (
            f": the source it was built from ({info.source}) lacks upstream's {info.missing[relative]}. Fetch the "
            "complete archive with `agentrl-envs data fetch --force` (from GitHub, or --from a complete mirror)"
        )

    def prompts(self, task_key: str) -> dict[str, Any]:
        """The text constants of one upstream task (``prompts.json`` → ``tasks`` → ``task_key``)."""
        prompts = _read_json(self.file("prompts.json"))
        tasks = prompts["tasks"]
        if task_key not in tasks:
            absent = prompts.get("missing_sources", {}).get(task_key)
            why = f" (the source lacked {', '.join(absent)}, which its texts are derived from)" if absent else ""
            raise DataError(f"prompts.json in {self.path} has no entry {task_key!r}{why}; it has {sorted(tasks)}.")
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
    rows: list[Any] = []
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
