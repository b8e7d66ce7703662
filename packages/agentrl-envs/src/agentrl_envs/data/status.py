"""What a data root holds: its commit and source, what the source lacked, and which splits can run from it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentrl_envs.data.build import DataRootInfo, read_info

__all__ = ["SPLIT_FILES", "RootStatus", "SplitStatus", "inspect"]

_ONTOLOGY = "data/knowledgegraph/ontology/"
_OS_TEST = tuple(f"data/os_interaction/data/{n}/" for n in range(1, 8))
SPLIT_FILES: dict[str, dict[str, tuple[str, ...]]] = {
    "alfworld": {
        "test": ("data/alfworld/new_std.json",),
        "dev": ("data/alfworld/dev.json",),
        "train": ("data/alfworld/train_valid.json",),
    },
    "db": {
        "test": ("data/dbbench/standard.jsonl",),
        "dev": ("data/dbbench/dev.jsonl",),
        "train": ("data/dbbench/db_out_new.jsonl",),
    },
    "kg": {
        "test": ("data/knowledgegraph/std.json", _ONTOLOGY),
        "dev": ("data/knowledgegraph/dev.json", _ONTOLOGY),
        "train": ("data/knowledgegraph/kg_rl_all.json", _ONTOLOGY),
    },
    "os": {
        "test": (*_OS_TEST, "data/os_interaction/scripts/"),
        "dev": ("data/os_interaction/data/dev.json", "data/os_interaction/scripts/dev/"),
        "train": ("data/os_interaction/train_0317/training.json",),
    },
    "webshop": {"test": (), "dev": (), "train": ()},
}
"""Task -> split -> the data-root files (or folders, ending in ``/``) the split reads, beside its config and texts.
The ALFWorld games and WebShop's products are generated assets, not data-root files."""
_CONFIGS = {"alfworld": "alfworld", "db": "dbbench", "kg": "kg", "os": "os", "webshop": "webshop"}
"""Task -> its config name and ``prompts.json`` key."""


@dataclass(frozen=True)
class SplitStatus:
    """Whether one split can run from the data root, and what it lacks if not."""

    task: str
    split: str
    missing: tuple[str, ...]

    @property
    def usable(self) -> bool:
        """True when nothing the split reads is missing."""
        return not self.missing


@dataclass(frozen=True)
class RootStatus:
    """A data root as ``agentrl-envs data status`` reports it."""

    path: Path
    exists: bool
    info: DataRootInfo | None
    """The build metadata; ``None`` for a root made by hand (or not there)."""
    splits: tuple[SplitStatus, ...]


def inspect(root: Path) -> RootStatus:
    """The status of the data root at ``root`` (which need not exist)."""
    exists = (root / "prompts.json").is_file()
    info = read_info(root) if exists else None
    prompts_tasks = set(info.prompts_tasks) if info is not None else None
    splits = []
    for task, table in SPLIT_FILES.items():
        key = _CONFIGS[task]
        common = [f"configs/tasks/{key}.yaml"]
        for split, paths in table.items():
            missing = [p for p in (*common, *paths) if not _present(root / p)]
            if prompts_tasks is not None and key not in prompts_tasks:
                missing.append(f"prompts.json -> {key}")
            splits.append(SplitStatus(task, split, tuple(missing)))
    return RootStatus(root, exists, info, tuple(splits))


def _present(path: Path) -> bool:
    if path.is_dir():
        return any(path.iterdir())
    return path.is_file()
