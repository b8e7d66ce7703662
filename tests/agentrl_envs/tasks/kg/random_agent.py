"""A random-tool agent for the KG env: random tools over what it has seen, then a random final answer."""

from __future__ import annotations

import json
import random
import re
from typing import Any

_RELATIONS = re.compile(r"^Observation: \[(.*)\]$")
_VARIABLE = re.compile(r"variable #(\d+)")


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
            if m["role"] == "user" and "\nEntities: [" in text:
                self.entities = [e for e in text.rsplit("\nEntities: [", 1)[1].rstrip("]").split(", ") if e]
            if match := _RELATIONS.match(text):
                self.names = [r for r in match.group(1).split(", ") if r]
            if match := _VARIABLE.search(text):
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
