"""A random-tool agent for the KG env: random tools over what it has seen, then a random final answer."""

from __future__ import annotations

import json
import random
import re
from typing import Any

_RELATIONS = re.compile(r"^Observation: \[(.*)\]$")
_VARIABLE = re.compile(r"^Observation: variable #(\d+)")


class RandomKGAgent:
    """Seeded; picks among the seven tools with arguments drawn from entities, variables and listed names."""

    def __init__(self, seed: int, *, answer_after: int = 8) -> None:
        self.rng = random.Random(seed)
        self.answer_after = answer_after
        self.reset([])

    def reset(self, entities: list[str]) -> None:
        self.entities = list(entities)
        self.variables: list[str] = []
        self.names: list[str] = []
        self.turn = 0

    def observe(self, messages: list[dict[str, Any]]) -> None:
        for m in messages:
            text = m.get("content") or ""
            if m["role"] == "user" and "\nEntities: [" in text:  # a question (the one-shot example's, then ours)
                self.entities = [e for e in text.rsplit("\nEntities: [", 1)[1].rstrip("]").split(", ") if e]
                self.variables, self.names = [], []
            if match := _RELATIONS.match(text):
                self.names = [r for r in match.group(1).split(", ") if r]
            if match := _VARIABLE.match(text):
                self.variables.append(f"#{match.group(1)}")

    def act(self) -> dict[str, Any]:
        self.turn += 1
        if self.turn > self.answer_after or (self.variables and self.rng.random() < 0.1):
            index = self.rng.randrange(len(self.variables) + 1)
            return {"role": "assistant", "content": f"Final Answer: #{index}"}
        nodes = self.entities + self.variables or ["m.0"]
        name = self.rng.choice(["get_relations", "get_neighbors", "intersection", "get_attributes", "argmax", "count"])
        node = self.rng.choice(nodes)
        label = self.rng.choice(self.names) if self.names else "people.person.nationality"
        args = {
            "get_relations": {"variable": node},
            "get_neighbors": {"variable": node, "relation": label},
            "intersection": {"variable1": node, "variable2": self.rng.choice(nodes)},
            "get_attributes": {"variable": node},
            "argmax": {"variable": node, "attribute": label},
            "count": {"variable": node},
        }[name]
        call = {
            "id": f"call_{self.turn}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}


def play(env: Any, agent: RandomKGAgent, index: int) -> tuple[float, list[dict[str, Any]], dict[str, Any]]:
    """One episode; returns the reward, every message the env sent, and the last info."""
    messages, info = env.reset(options={"index": index})
    agent.reset([])
    agent.observe(messages)
    seen = list(messages)
    reward, done = 0.0, False
    while not done:
        messages, reward, terminated, truncated, info = env.step(agent.act())
        agent.observe(messages)
        seen += messages
        done = terminated or truncated
    return reward, seen, info


class ExplorerKGAgent(RandomKGAgent):
    """Goes deep on purpose: follows listed relations, ranks by listed attributes, counts, intersects.

    Used to compare backends on long, varied programs (superlatives under joins, counts, intersections).
    """

    def __init__(self, seed: int) -> None:
        super().__init__(seed, answer_after=14)
        self.listed: dict[str, list[str]] = {}
        self.attributes: dict[str, list[str]] = {}
        self.pending: tuple[str, str] | None = None

    def reset(self, entities: list[str]) -> None:
        super().reset(entities)
        self.listed, self.attributes, self.pending = {}, {}, None

    def observe(self, messages: list[dict[str, Any]]) -> None:
        super().observe(messages)
        if self.pending is not None:
            kind, node = self.pending
            if self.names and any((m.get("content") or "").startswith("Observation: [") for m in messages):
                (self.attributes if kind == "attributes" else self.listed)[node] = list(self.names)
            self.pending = None

    def act(self) -> dict[str, Any]:
        self.turn += 1
        if self.turn > self.answer_after:
            index = self.rng.randrange(len(self.variables) + 1)
            return {"role": "assistant", "content": f"Final Answer: #{index}"}
        nodes = self.entities + self.variables
        node = self.variables[-1] if self.variables and self.rng.random() < 0.7 else self.rng.choice(nodes)
        roll = self.rng.random()
        if node in self.listed and self.listed[node] and roll < 0.6:
            return self._call("get_neighbors", variable=node, relation=self.rng.choice(self.listed[node]))
        if node in self.attributes and self.attributes[node] and roll < 0.8:
            name = self.rng.choice(["argmax", "argmin"])
            return self._call(name, variable=node, attribute=self.rng.choice(self.attributes[node]))
        if node.startswith("#") and roll < 0.3:
            self.pending = ("attributes", node)
            return self._call("get_attributes", variable=node)
        if node.startswith("#") and len(self.variables) > 1 and roll < 0.4:
            return self._call("intersection", variable1=node, variable2=self.rng.choice(self.variables))
        if node.startswith("#") and roll < 0.45:
            return self._call("count", variable=node)
        self.pending = ("relations", node)
        return self._call("get_relations", variable=node)

    def _call(self, name: str, **arguments: str) -> dict[str, Any]:
        function = {"name": name, "arguments": json.dumps(arguments)}
        call = {"id": f"call_{self.turn}", "type": "function", "function": function}
        return {"role": "assistant", "content": None, "tool_calls": [call]}
