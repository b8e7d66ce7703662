"""PDDL problems for ALFWorld games, built from a scene and a split entry.

The problem has the shape of ALFWorld's ``initial_state.pddl`` (which ALFRED wrote from a simulator state):
every object and receptacle type is declared, each receptacle instance has a location (its interaction pose,
``loc|x|z|rotation|horizon``), each object instance lies in a receptacle at that receptacle's location, and
the goal is ALFWorld's goal for the task type (``alfworld.gen.goal_library``). The task sentence is one of
the goal library's templates, as ``alfworld-generate`` writes it into the grammar.

What we decide ourselves, because the per-trial simulator state is not shipped: which object instances exist
(every pickupable type of the scene, 1-3 instances), which receptacle holds each (one that ALFRED allows for
the type, ``VAL_RECEPTACLE_OBJECTS``), where the agent starts (a reachable floor point), and receptacles a
scene's interaction-pose file lacks (placed at a reachable point). Everything is drawn from a seeded RNG.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from agentrl_envs.tasks.alfworld.engine import alfworld_modules
from agentrl_envs.tasks.alfworld.scenes import GameSpec, Scene

__all__ = ["Placed", "Problem", "ProblemBuilder", "build_problem"]

_LAMPS = ("DeskLamp", "FloorLamp")
# Receptacles a lamp may stand on (a desk lamp on furniture, a floor lamp beside it).
_LAMP_HOSTS = ("Desk", "SideTable", "Dresser", "Shelf", "CoffeeTable", "DiningTable", "CounterTop", "TVStand", "Bed")
# The receptacle each state-change task needs (the domain's CleanObject accepts SinkBasin only).
_TOOL_RECEPTACLE = {
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
}
_MAX_INSTANCES = 3


@dataclass
class _Instance:
    id: str
    type: str
    location: str
    receptacle: str | None = None


@dataclass
class ProblemBuilder:
    """Builds one game's PDDL problem and task sentence; every choice comes from ``rng``."""

    spec: GameSpec
    scene: Scene
    rng: random.Random
    receptacles: list[_Instance] = field(default_factory=list)
    objects: list[_Instance] = field(default_factory=list)
    agent_location: str = ""

    def __post_init__(self) -> None:
        mods = alfworld_modules()
        self.constants = mods.constants
        self.goal_library = mods.goal_library
        self.static_receptacles = set(self.constants.RECEPTACLES) - set(self.constants.MOVABLE_RECEPTACLES)
        self._used_locations: set[str] = set()
        self._used_ids: set[str] = set()

    # ----------------------------------------------------------------- scene content

    def place_receptacles(self) -> None:
        """Receptacles from the pose file, plus one of each needed type the pose file lacks."""
        for rid, (x, z, rotation, horizon) in sorted(self.scene.receptacle_poses.items()):
            rtype = receptacle_type(rid)
            if rtype in self.static_receptacles:
                self._add_receptacle(rid, rtype, _location(x, z, rotation, horizon))
        present = {r.type for r in self.receptacles}
        wanted = {t for t in self.scene.object_types if t in self.static_receptacles}
        if self.spec.task_type != "look_at_obj_in_light":
            wanted.add(self.spec.parent_target)
        if self.spec.task_type in _TOOL_RECEPTACLE:
            wanted.add(_TOOL_RECEPTACLE[self.spec.task_type])
        for rtype in sorted(wanted - present):
            x, z = self._free_point()
            self._add_receptacle(_synthetic_id(rtype, x, z), rtype, self._free_location(x, z))

    def place_objects(self) -> None:
        """Instances of every pickupable type of the scene (and of the target), each in an allowed receptacle."""
        hosts = self._hosts_by_object_type()
        types = {t for t in self.scene.object_types if t in hosts and t not in self.static_receptacles}
        types.add(self.spec.object_target)
        for otype in sorted(types):
            allowed = hosts.get(otype, [])
            if otype == self.spec.object_target:
                allowed = [r for r in allowed if not self._is_goal_receptacle(r)]
                low = 2 if self.spec.task_type == "pick_two_obj_and_place" else 1
            else:
                low = 1
            if not allowed:
                continue
            for _ in range(self.rng.randint(low, max(low, _MAX_INSTANCES))):
                self._add_object(otype, self.rng.choice(allowed))
        if self.spec.task_type == "look_at_obj_in_light":
            lamp_hosts = [r for r in self.receptacles if r.type in _LAMP_HOSTS] or self.receptacles
            self._add_object(self.spec.parent_target, self.rng.choice(lamp_hosts))

    def place_agent(self) -> None:
        """The agent starts on a reachable floor point that is not a receptacle's interaction pose."""
        x, z = self._free_point()
        self.agent_location = self._free_location(x, z)

    # ----------------------------------------------------------------- PDDL text

    def problem(self) -> str:
        """The PDDL problem text."""
        c = self.constants
        otypes = sorted(set(c.OBJECTS_WSLICED) | set(c.MOVABLE_RECEPTACLES) | {self.spec.object_target})
        rtypes = sorted(self.static_receptacles)
        declarations = ["agent1 - agent"]
        declarations += [f"{t}Type - otype" for t in otypes if t not in self.static_receptacles]
        declarations += [f"{t}Type - rtype" for t in rtypes]
        declarations += [f"{o.id} - object" for o in self.objects]
        declarations += [f"{r.id} - receptacle" for r in self.receptacles]
        locations = sorted({r.location for r in self.receptacles} | {self.agent_location})
        declarations += [f"{loc} - location" for loc in locations]
        init = [f"(atLocation agent1 {self.agent_location})"]
        init += self._receptacle_facts()
        init += self._object_facts()
        body = "\n        ".join(_mangle(line) for line in init)
        objects = "\n        ".join(_mangle(line) for line in declarations)
        return (
            f"(define (problem plan_{self.spec.trial})\n(:domain alfred)\n(:objects\n        {objects}\n        )\n"
            f"(:init\n        {body}\n        )\n{self.goal()}"
        )

    def goal(self) -> str:
        """ALFWorld's goal for the task type (the goal library's PDDL; it also closes ``define``)."""
        key = self.spec.task_type + ("_slice" if self.spec.is_sliced else "")
        text = self.goal_library.gdict[key]["pddl"]
        spec = self.spec
        return text.format(obj=spec.object_target, recep=spec.parent_target, toggle=spec.parent_target).replace(
            "#", "-"
        )

    def task_sentence(self) -> str:
        """The task as ALFWorld's templates word it (``put some pencil on shelf``)."""
        key = self.spec.task_type + ("_slice" if self.spec.is_sliced else "")
        template = self.rng.choice(self.goal_library.gdict[key]["templates"])
        obj = self.spec.base_object.lower()
        return template.format(obj=obj, recep=self.spec.parent_target.lower(), toggle=self.spec.parent_target.lower())

    # ----------------------------------------------------------------- internals

    def _receptacle_facts(self) -> list[str]:
        facts = []
        openable = set(self.constants.OPENABLE_CLASS_LIST)
        for r in self.receptacles:
            facts.append(f"(receptacleType {r.id} {r.type}Type)")
            facts.append(f"(receptacleAtLocation {r.id} {r.location})")
            if r.type in openable:
                facts.append(f"(openable {r.id})")
        object_types = sorted({o.type for o in self.objects})
        for rtype in sorted({r.type for r in self.receptacles}):
            allowed = self.constants.VAL_RECEPTACLE_OBJECTS.get(rtype, set())
            facts += [f"(canContain {rtype}Type {otype}Type)" for otype in object_types if otype in allowed]
        return facts

    def _object_facts(self) -> list[str]:
        actions = self.constants.VAL_ACTION_OBJECTS
        facts = []
        for o in self.objects:
            facts.append(f"(objectType {o.id} {o.type}Type)")
            facts.append(f"(objectAtLocation {o.id} {o.location})")
            facts.append(f"(inReceptacle {o.id} {o.receptacle})")
            if o.type in _LAMPS:
                facts.append(f"(toggleable {o.id})")
                continue
            facts.append(f"(pickupable {o.id})")
            if o.type in self.constants.MOVABLE_RECEPTACLES:
                facts.append(f"(isReceptacleObject {o.id})")
            for prop, predicate in (("Cleanable", "cleanable"), ("Heatable", "heatable"), ("Coolable", "coolable")):
                if o.type in actions[prop]:
                    facts.append(f"({predicate} {o.id})")
            if o.type in actions["Sliceable"]:
                facts.append(f"(sliceable {o.id})")
            if o.type.endswith("Sliced"):
                facts += [f"(sliceable {o.id})", f"(isSliced {o.id})"]
        return facts

    def _hosts_by_object_type(self) -> dict[str, list[_Instance]]:
        hosts: dict[str, list[_Instance]] = defaultdict(list)
        for r in self.receptacles:
            for otype in sorted(self.constants.VAL_RECEPTACLE_OBJECTS.get(r.type, ())):
                hosts[otype].append(r)
        return hosts

    def _is_goal_receptacle(self, receptacle: _Instance) -> bool:
        """A target placed in a receptacle of the goal's type would satisfy a placing goal before any move."""
        return self.spec.task_type != "look_at_obj_in_light" and receptacle.type == self.spec.parent_target

    def _add_receptacle(self, rid: str, rtype: str, location: str) -> None:
        self._used_ids.add(rid)
        self.receptacles.append(_Instance(rid, rtype, self._unique_location(location)))

    def _add_object(self, otype: str, receptacle: _Instance) -> None:
        rx, _, rz = _coordinates(receptacle.id)
        while True:
            x = rx + self.rng.uniform(-0.4, 0.4)
            y = self.rng.uniform(0.0, 1.5)
            z = rz + self.rng.uniform(-0.4, 0.4)
            oid = f"{otype}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}"
            if otype.endswith("Sliced"):  # ALFRED names a slice after its whole object: ``Apple|...|AppleSliced_1``
                oid = f"{otype.removesuffix('Sliced')}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}|{otype}_1"
            if oid not in self._used_ids:
                break
        self._used_ids.add(oid)
        self.objects.append(_Instance(oid, otype, receptacle.location, receptacle.id))

    def _free_point(self) -> tuple[float, float]:
        points = self.scene.reachable_points
        x, z = points[self.rng.randrange(len(points))]
        return float(x), float(z)

    def _free_location(self, x: float, z: float) -> str:
        return self._unique_location(_location(x, z, 90 * self.rng.randrange(4), 30))

    def _unique_location(self, location: str) -> str:
        """Give every receptacle and the start its own location (the horizon field only names it)."""
        head, _, horizon = location.rpartition("|")
        value = int(horizon)
        while location in self._used_locations:
            value += 15
            location = f"{head}|{value}"
        self._used_locations.add(location)
        return location


@dataclass(frozen=True)
class Placed:
    """A receptacle or object instance of a generated problem."""

    id: str
    type: str
    location: str
    receptacle: str | None = None
    """The receptacle holding an object (``None`` for receptacles)."""
    openable: bool = False

    @property
    def pddl_name(self) -> str:
        """The instance's name in the PDDL engine (mangled, lower-cased by fast-downward)."""
        return _mangle(self.id).lower()


@dataclass(frozen=True)
class Problem:
    """One game's PDDL problem, task sentence and layout (what the expert plans from)."""

    text: str
    sentence: str
    receptacles: tuple[Placed, ...]
    objects: tuple[Placed, ...]
    start: str


def build_problem(spec: GameSpec, scene: Scene, seed: int) -> Problem:
    """The PDDL problem, task sentence and layout of one game, deterministic for ``seed``."""
    builder = ProblemBuilder(spec, scene, random.Random(seed))
    builder.place_receptacles()
    builder.place_objects()
    builder.place_agent()
    sentence = builder.task_sentence()
    openable = set(builder.constants.OPENABLE_CLASS_LIST)
    return Problem(
        text=builder.problem(),
        sentence=sentence,
        receptacles=tuple(Placed(r.id, r.type, r.location, openable=r.type in openable) for r in builder.receptacles),
        objects=tuple(Placed(o.id, o.type, o.location, o.receptacle) for o in builder.objects),
        start=builder.agent_location,
    )


def receptacle_type(receptacle_id: str) -> str:
    """The type of a receptacle id (``Sink|...|SinkBasin`` is a ``SinkBasin``)."""
    parts = receptacle_id.split("|")
    return parts[4] if len(parts) > 4 else parts[0]


def _synthetic_id(rtype: str, x: float, z: float) -> str:
    """An ALFRED-style id; basins keep ALFRED's ``Sink|...|SinkBasin`` form so they are named ``sinkbasin``."""
    coords = f"{x:+06.2f}|+00.00|{z:+06.2f}"
    if rtype.endswith("Basin"):
        return f"{rtype.removesuffix('Basin')}|{coords}|{rtype}"
    return f"{rtype}|{coords}"


def _coordinates(entity_id: str) -> tuple[float, float, float]:
    parts = entity_id.split("|")
    return float(parts[1]), float(parts[2]), float(parts[3])


def _location(x: float, z: float, rotation: int, horizon: int) -> str:
    return f"loc|{round(x / 0.25)}|{round(z / 0.25)}|{int(rotation) // 90 % 4}|{int(horizon)}"


def _mangle(text: str) -> str:
    """ALFRED's escaping of ids into PDDL names (``|`` -> ``_bar_``, ``-`` -> ``_minus_`` ...)."""
    for old, new in (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_")):
        text = text.replace(old, new)
    # Declarations use ``name - type``: restore the separator the escaping above turned into a word.
    return text.replace(" _minus_ ", " - ")
