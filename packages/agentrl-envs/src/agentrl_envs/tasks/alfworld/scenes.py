"""ALFRED scenes as the ``alfworld`` wheel ships them, and the sample descriptions of the split lists.

The wheel carries, per ``FloorPlanN``, the object types present (``-objects.json``), the receptacle instances
with the pose from which the agent interacts with them (``-openable.json``: ``[x, z, rotation, horizon]``) and
the reachable floor points (``-layout.npy``). ALFRED's per-trial object poses (``traj_data.json``) are not
shipped; :mod:`.problems` places objects itself from these scene facts.

A split entry such as ``json_2.1.1/valid_unseen/pick_and_place_simple-Pencil-None-Shelf-308/trial_T.../game.tw-pddl``
names the task type, target object, movable receptacle, parent receptacle (the lamp type for
``look_at_obj_in_light``), scene number and trial id.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np

from agentrl_envs.core.errors import DataError

__all__ = ["GameSpec", "Scene", "load_scene", "parse_entry"]

TASK_TYPES = (
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)


@dataclass(frozen=True)
class GameSpec:
    """What a split entry says about its game."""

    path: str
    task_type: str
    object_target: str
    mrecep_target: str | None
    parent_target: str
    scene: int
    trial: str

    @property
    def is_sliced(self) -> bool:
        """Whether the target is a slice (``BreadSliced``): its pieces exist already, sliced."""
        return self.object_target.endswith("Sliced")

    @property
    def base_object(self) -> str:
        """The target's type without ``Sliced`` (for the task text)."""
        return self.object_target.removesuffix("Sliced")


def parse_entry(path: str) -> GameSpec:
    """Read a split-list entry.

    Raises:
        DataError: If the entry is not ``.../<task>-<object>-<mrecep>-<parent>-<scene>/<trial>/game.tw-pddl``.
    """
    parts = path.split("/")
    try:
        folder, trial = parts[-3], parts[-2]
        task_type, obj, mrecep, parent, scene = folder.split("-")
        spec = GameSpec(path, task_type, obj, None if mrecep == "None" else mrecep, parent, int(scene), trial)
    except (IndexError, ValueError) as e:
        expected = "<task>-<object>-<mrecep>-<recep>-<scene>/<trial>/game.tw-pddl"
        raise DataError(f"Unrecognised ALFWorld game path {path!r}: expected .../{expected}.") from e
    if spec.task_type not in TASK_TYPES:
        raise DataError(f"Unsupported ALFWorld task type {spec.task_type!r} in {path!r}; known: {TASK_TYPES}.")
    if spec.mrecep_target is not None:
        raise DataError(f"Movable-receptacle tasks are not in AgentBench's splits and not supported: {path!r}.")
    return spec


@dataclass(frozen=True)
class Scene:
    """One ALFRED floor plan."""

    number: int
    object_types: frozenset[str]
    receptacle_poses: dict[str, tuple[float, float, int, int]]
    """Receptacle id (``Cabinet|+00.65|+00.48|+00.24``) -> interaction pose ``(x, z, rotation, horizon)``."""
    reachable_points: np.ndarray
    """``(n, 2)`` floor points ``(x, z)`` in metres."""


def layouts_dir() -> Path:
    """The ``alfworld`` wheel's folder of scene layouts."""
    from agentrl_envs.tasks.alfworld.engine import alfworld_modules

    alfworld_modules()  # raises the install hint if the extra is missing
    return Path(str(resources.files("alfworld.gen") / "layouts"))


@cache
def load_scene(number: int) -> Scene:
    """Read floor plan ``number`` from the wheel.

    Raises:
        DataError: If the wheel has no such floor plan.
    """
    folder = layouts_dir()
    stem = folder / f"FloorPlan{number}"
    try:
        object_types = json.loads(Path(f"{stem}-objects.json").read_text())
        poses = json.loads(Path(f"{stem}-openable.json").read_text())
        points = np.load(f"{stem}-layout.npy")
    except FileNotFoundError as e:
        raise DataError(f"The alfworld wheel has no layout for FloorPlan{number} in {folder}.") from e
    receptacle_poses = {key: (float(x), float(z), int(rot), int(hor)) for key, (x, z, rot, hor) in poses.items()}
    return Scene(number, frozenset(object_types), receptacle_poses, np.asarray(points, dtype=float))
