"""A hand-coded expert for generated games: it knows where everything is, so it walks straight to the goal.

ALFWorld's own experts explore (the hand-coded agent) or search (fast-downward's planner, seconds per game on
these scenes). A generated game's layout is known, so its plan can be written down: fetch the target (go to
its receptacle, open it if closed, take it), treat it where the task says (clean at the sink basin, heat in the
microwave, cool in the fridge), then put it in a receptacle of the goal's type, or for ``look_at_obj_in_light``
carry it to the lamp and use the lamp. :mod:`.games` replays the plan through the engine and only accepts the
game if it wins; when it does not, fast-downward's planner is asked instead.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentrl_envs.tasks.alfworld.problems import Placed, Problem
from agentrl_envs.tasks.alfworld.scenes import GameSpec

__all__ = ["expert_plan"]

_TREATMENT = {
    "pick_clean_then_place_in_recep": ("clean", "SinkBasin"),
    "pick_heat_then_place_in_recep": ("heat", "Microwave"),
    "pick_cool_then_place_in_recep": ("cool", "Fridge"),
}


class _Walk:
    """Commands in order, tracking where the agent is and which receptacles are open."""

    def __init__(self, problem: Problem, names: Mapping[str, str]) -> None:
        self.names = names
        self.location = problem.start
        self.opened: set[str] = set()
        self.commands: list[str] = []
        self.receptacles = {r.id: r for r in problem.receptacles}

    def name(self, entity: Placed) -> str:
        return self.names[entity.pddl_name]

    def go_to(self, receptacle: Placed) -> None:
        if self.location != receptacle.location:
            self.commands.append(f"go to {self.name(receptacle)}")
            self.location = receptacle.location

    def open(self, receptacle: Placed) -> None:
        if receptacle.openable and receptacle.id not in self.opened:
            self.commands.append(f"open {self.name(receptacle)}")
            self.opened.add(receptacle.id)

    def fetch(self, obj: Placed) -> None:
        assert obj.receptacle is not None
        holder = self.receptacles[obj.receptacle]
        self.go_to(holder)
        self.open(holder)
        self.commands.append(f"take {self.name(obj)} from {self.name(holder)}")

    def put(self, obj: Placed, receptacle: Placed) -> None:
        self.go_to(receptacle)
        self.open(receptacle)
        self.commands.append(f"put {self.name(obj)} in/on {self.name(receptacle)}")


def expert_plan(spec: GameSpec, problem: Problem, names: Mapping[str, str]) -> list[str] | None:
    """The expert's commands for a generated game, or ``None`` if the layout lacks what the task needs.

    Args:
        spec: The split entry (task type, target, goal receptacle type).
        problem: The generated problem's layout.
        names: PDDL name -> the name the agent sees (from the engine, after loading the game).
    """
    walk = _Walk(problem, names)
    targets = [o for o in problem.objects if o.type == spec.object_target]
    if spec.task_type == "look_at_obj_in_light":
        lamps = [o for o in problem.objects if o.type == spec.parent_target]
        if not targets or not lamps or lamps[0].receptacle is None:
            return None
        walk.fetch(targets[0])
        walk.go_to(walk.receptacles[lamps[0].receptacle])
        walk.commands.append(f"use {walk.name(lamps[0])}")
        return walk.commands
    goals = [r for r in problem.receptacles if r.type == spec.parent_target]
    count = 2 if spec.task_type == "pick_two_obj_and_place" else 1
    if len(targets) < count or not goals:
        return None
    treatment = _TREATMENT.get(spec.task_type)
    tools = [r for r in problem.receptacles if treatment and r.type == treatment[1]]
    if treatment and not tools:
        return None
    for obj in targets[:count]:
        walk.fetch(obj)
        if treatment:
            walk.go_to(tools[0])
            walk.commands.append(f"{treatment[0]} {walk.name(obj)} with {walk.name(tools[0])}")
        walk.put(obj, goals[0])
    return walk.commands
