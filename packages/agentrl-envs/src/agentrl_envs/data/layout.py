"""Which upstream files a data root is made of, and where each one goes.

A data root holds upstream's ``data/`` and ``configs/tasks/`` of the five FC tasks as upstream has them, the two
folders the tasks read from upstream's ``src/`` (moved under ``data/``), and upstream's ``LICENSE``. The task
sources under ``src/server/tasks/`` are read to derive ``prompts.json`` and are not copied.
"""

from __future__ import annotations

__all__ = ["CONFIG_NAMES", "COPIED_FILES", "DATA_DIRS", "MOVED_DIRS", "PROMPT_SOURCES", "data_root_path", "is_used"]

DATA_DIRS = ("data/alfworld/", "data/dbbench/", "data/knowledgegraph/", "data/os_interaction/")
"""Upstream data folders of the five FC tasks (WebShop's data is generated, not in the repository)."""
CONFIG_NAMES = ("alfworld", "dbbench", "kg", "os", "webshop")
"""``configs/tasks/<name>.yaml`` of the five tasks."""
MOVED_DIRS = {
    "src/server/tasks/knowledgegraph/ontology/": "data/knowledgegraph/ontology/",
    "src/server/tasks/alfworld/prompts/": "data/alfworld/prompts/",
}
"""Data that upstream keeps beside its code: the KG ontology (read by the KG API) and ALFWorld's few-shot sets."""
COPIED_FILES = ("LICENSE",)
PROMPT_SOURCES: dict[str, tuple[str, ...]] = {
    "alfworld": ("src/server/tasks/alfworld/task.py", "src/server/tasks/alfworld/utils.py"),
    "dbbench": ("src/server/tasks/dbbench/task.py", "src/server/tasks/dbbench/interaction.py"),
    "kg": ("src/server/tasks/knowledgegraph/task.py", "src/server/tasks/knowledgegraph/const.py"),
    "os": ("src/server/tasks/os_interaction/task.py",),
    "webshop": ("src/server/tasks/webshop/task.py",),
}
"""The FC task code each task's texts are derived from (``prompts.json`` key -> upstream files)."""


def data_root_path(upstream_path: str) -> str | None:
    """Where an upstream file goes in the data root, or ``None`` if it is not copied."""
    if upstream_path in COPIED_FILES or upstream_path.startswith(DATA_DIRS):
        return upstream_path
    if upstream_path in {f"configs/tasks/{name}.yaml" for name in CONFIG_NAMES}:
        return upstream_path
    for source, target in MOVED_DIRS.items():
        if upstream_path.startswith(source):
            return target + upstream_path[len(source) :]
    return None


_SOURCES = frozenset(path for paths in PROMPT_SOURCES.values() for path in paths)


def is_used(upstream_path: str) -> bool:
    """Whether the project reads an upstream file (copied into the data root, or a source of ``prompts.json``)."""
    return data_root_path(upstream_path) is not None or upstream_path in _SOURCES
