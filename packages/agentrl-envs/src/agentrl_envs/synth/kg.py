"""Procedural KG tasks: question programs over the ontology's relations, starting from real entities.

Entities come from the training questions (``kg_rl_all.json``): each named entity there, with the type its
first relation gives it. A task picks such an entity and builds a program from the ontology's relations of
that type (only relations ``get_relations`` shows, whose range type the API knows), written as upstream's
``actions`` (with the ``get_relations``/``get_attributes`` calls the API requires first) and an
``s_expression``. Answers are entities of the answer type from the same pool when there are any, else fresh
ids. The env builds each task's subgraph from its program (:mod:`agentrl_envs.tasks.kg.build`), so the
program's answer holds there by construction and validation checks the rest: that the API accepts every
step, and that an empty or wrong answer fails.

Levels: 1 one hop (``get_neighbors``); 2 two hops, or a count over one hop; 3 the intersection of two
entities' neighbours, or an argmax/argmin over one hop.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.env import ToolEnv
from agentrl_envs.core.errors import DataError
from agentrl_envs.core.messages import Message
from agentrl_envs.synth.types import Candidate, Rejection
from agentrl_envs.synth.validate import Player, ScriptedPlayer, TaskAdapter, call
from agentrl_envs.tasks.kg.data import SPLIT_FILES, parse_sample
from agentrl_envs.tasks.kg.ontology import Ontology, load_ontology

__all__ = ["KGAdapter", "KGGenerator"]

SOURCE = "agentrl-synth"


@dataclass(frozen=True, slots=True)
class Entity:
    """A named Freebase entity and its type."""

    name: str
    mid: str
    type: str


def _phrase(relation: str) -> str:
    return relation.rsplit(".", 1)[-1].replace("_", " ").replace(" s", "s")


def _noun(type_: str) -> str:
    return type_.rsplit(".", 1)[-1].replace("_", " ")


class KGGenerator:
    """Draws KG training tasks (see the module docstring); deterministic for a seed."""

    task = "kg"

    def __init__(self, data: DataRoot, *, seed: int = 0) -> None:
        """Read the ontology and the entity pool from the data root."""
        self.seed = seed
        self.ontology = load_ontology(data)
        self.entities = _entity_pool(data, self.ontology)
        if not self.entities:
            raise DataError(f"No typed entities found in {SPLIT_FILES['train']} to start KG questions from.")
        self.by_type: dict[str, list[Entity]] = defaultdict(list)
        for entity in self.entities:
            self.by_type[entity.type].append(entity)
        self._ranges = {r: t for r, t in self.ontology.range.items() if r in self.ontology.relations}

    def candidates(self, difficulty: int) -> Iterator[Candidate]:
        """An endless, seeded stream of candidates of one level."""
        rng = random.Random(f"agentrl-synth-kg:{self.seed}:{difficulty}")
        makers = {1: (self._one_hop,), 2: (self._two_hops, self._count), 3: (self._intersection, self._superlative)}
        while True:
            sample = rng.choice(makers[difficulty])(rng)
            if sample is not None:
                sample["difficulty"] = difficulty
                yield Candidate("kg", "procedural", difficulty, sample)

    # ----------------------------------------------------------------- programs

    def _hop(self, rng: random.Random, type_: str) -> str | None:
        relations = [
            r for r in self.ontology.relations_of(type_) if not self._ranges.get(r, "type.").startswith("type.")
        ]
        return rng.choice(relations) if relations else None

    def _one_hop(self, rng: random.Random) -> dict[str, Any] | None:
        entity = rng.choice(self.entities)
        relation = self._hop(rng, entity.type)
        if relation is None:
            return None
        actions = [f"get_relations({entity.mid})", f"get_neighbors({entity.mid},{relation})"]
        expression = f"(JOIN (R {relation}) {entity.mid})"
        question = f"what is the {_phrase(relation)} of {entity.name.lower()}?"
        return self._sample(rng, question, [entity], expression, actions, self._answers(rng, relation, [entity]))

    def _two_hops(self, rng: random.Random) -> dict[str, Any] | None:
        entity = rng.choice(self.entities)
        first = self._hop(rng, entity.type)
        second = self._hop(rng, self._ranges[first]) if first else None
        if first is None or second is None or second in (first, self.ontology.reverse.get(first)):
            return None
        actions = [
            f"get_relations({entity.mid})",
            f"get_neighbors({entity.mid},{first})",
            "get_relations(#0)",
            f"get_neighbors(#0,{second})",
        ]
        expression = f"(JOIN (R {second}) (JOIN (R {first}) {entity.mid}))"
        question = f"what is the {_phrase(second)} of the {_phrase(first)} of {entity.name.lower()}?"
        return self._sample(rng, question, [entity], expression, actions, self._answers(rng, second, [entity]))

    def _count(self, rng: random.Random) -> dict[str, Any] | None:
        entity = rng.choice(self.entities)
        relation = self._hop(rng, entity.type)
        if relation is None:
            return None
        actions = [f"get_relations({entity.mid})", f"get_neighbors({entity.mid},{relation})", "count(#0)"]
        expression = f"(COUNT (JOIN (R {relation}) {entity.mid}))"
        question = f"how many {_phrase(relation)} does {entity.name.lower()} have?"
        answer = [{"answer_type": "Value", "answer_argument": str(rng.randint(2, 6))}]
        return self._sample(rng, question, [entity], expression, actions, answer)

    def _intersection(self, rng: random.Random) -> dict[str, Any] | None:
        first = rng.choice(self.entities)
        r1 = self._hop(rng, first.type)
        if r1 is None:
            return None
        target = self._ranges[r1]
        options = [
            (other, r)
            for other in rng.sample(self.entities, min(200, len(self.entities)))
            if other.mid != first.mid
            for r in self.ontology.relations_of(other.type)
            if r != r1 and self._ranges.get(r) == target
        ]
        if not options:
            return None
        second, r2 = rng.choice(options)
        actions = [
            f"get_relations({first.mid})",
            f"get_neighbors({first.mid},{r1})",
            f"get_relations({second.mid})",
            f"get_neighbors({second.mid},{r2})",
            "intersection(#0,#1)",
        ]
        expression = f"(AND (JOIN (R {r1}) {first.mid}) (JOIN (R {r2}) {second.mid}))"
        question = (
            f"which {_noun(target)} is the {_phrase(r1)} of {first.name.lower()} "
            f"and the {_phrase(r2)} of {second.name.lower()}?"
        )
        answers = self._answers(rng, r1, [first, second], most=1)
        return self._sample(rng, question, [first, second], expression, actions, answers)

    def _superlative(self, rng: random.Random) -> dict[str, Any] | None:
        entity = rng.choice(self.entities)
        relation = self._hop(rng, entity.type)
        attributes = self.ontology.relations_of(self._ranges[relation], attributes=True) if relation else ()
        if relation is None or not attributes:
            return None
        attribute, kind = rng.choice(attributes), rng.choice(("argmax", "argmin"))
        actions = [
            f"get_relations({entity.mid})",
            f"get_neighbors({entity.mid},{relation})",
            "get_attributes(#0)",
            f"{kind}(#0,{attribute})",
        ]
        expression = f"({kind.upper()} (JOIN (R {relation}) {entity.mid}) {attribute})"
        word = "largest" if kind == "argmax" else "smallest"
        question = f"which {_phrase(relation)} of {entity.name.lower()} has the {word} {_phrase(attribute)}?"
        answers = self._answers(rng, relation, [entity], most=1)
        return self._sample(rng, question, [entity], expression, actions, answers)

    # ----------------------------------------------------------------- answers and samples

    def _answers(self, rng: random.Random, relation: str, avoid: list[Entity], most: int = 3) -> list[dict[str, Any]]:
        type_ = self._ranges[relation]
        pool = [e for e in self.by_type.get(type_, ()) if e not in avoid]
        k = rng.randint(1, most)
        if len(pool) >= k:
            chosen = [(e.mid, e.name) for e in rng.sample(pool, k)]
        else:
            chosen = [(_fresh_mid(rng), f"{_noun(type_)} {i + 1}") for i in range(k)]
        return [{"answer_type": "Entity", "answer_argument": mid, "entity_name": name} for mid, name in chosen]

    def _sample(
        self,
        rng: random.Random,
        question: str,
        entities: list[Entity],
        expression: str,
        actions: list[str],
        answers: list[dict[str, Any]],
    ) -> dict[str, Any]:
        qid = f"synth-{hashlib.sha1(question.encode()).hexdigest()[:12]}"
        return {
            "question": question,
            "qid": qid,
            "source": SOURCE,
            "entities": {e.name: e.mid for e in entities},
            "s_expression": expression,
            "actions": actions,
            "answer": answers,
        }


def _fresh_mid(rng: random.Random) -> str:
    return f"m.0synth{rng.getrandbits(40):010x}"


def _entity_pool(data: DataRoot, ontology: Ontology) -> list[Entity]:
    """Named entities of the training questions, typed by the domain of the first relation taken from them."""
    found: dict[str, Entity] = {}
    for item in data.json(SPLIT_FILES["train"]):
        names = {mid: name for name, mid in item.get("entities", {}).items()}
        for action in item.get("actions", []):
            if not action.startswith("get_neighbors("):
                continue
            mid, _, relation = action[len("get_neighbors(") : -1].partition(",")
            if not mid.startswith(("m.", "f.")):  # upstream's API refuses other ids (``g.11b6...``) as entities
                continue
            type_ = ontology.domain.get(relation.strip())
            # at least three relations, so the graph builder can give the entity distractors to choose among
            if mid in names and type_ and mid not in found and len(ontology.relations_of(type_)) >= 3:
                found[mid] = Entity(names[mid], mid, type_)
    return sorted(found.values(), key=lambda e: e.mid)


class KGAdapter(TaskAdapter):
    """Validation of KG samples (a JSON list, ``std.json``'s format)."""

    task = "kg"
    suffix = ".json"

    def prepare(self, sample: dict[str, Any]) -> Rejection | None:
        """Check the sample parses and its entities are not among its answers."""
        try:
            parsed = parse_sample(0, sample)
        except DataError as e:
            return Rejection("malformed", str(e))
        if not parsed.answers:
            return Rejection("malformed", "no answer")
        if parsed.answers & set(parsed.entities.values()):
            return Rejection("answer_is_entity", "a question entity is among the answers")
        return None

    def make_env(self, path: Path) -> ToolEnv:
        """A KG env on ``path`` (graphs built from its programs)."""
        from agentrl_envs.tasks.kg.env import KGEnv

        return KGEnv(split="train", train_file=path, data_root=str(self.data.path), **self.env_options)

    def foils(self, sample: dict[str, Any], gold: list[Message]) -> dict[str, Player]:
        """Empty: answer before any variable exists; wrong: a variable short of the answer, or another relation."""
        variables = sum(
            a.split("(")[0] in ("get_neighbors", "intersection", "argmax", "argmin", "count") for a in sample["actions"]
        )
        gold_calls = [m for m in gold if m.get("role") == "assistant" and m.get("tool_calls")]
        empty = ScriptedPlayer(lambda step, obs: {"role": "assistant", "content": "Final Answer: #0"})
        if variables > 1:

            def short(step: int, obs: list[Message]) -> Message:
                if step < len(gold_calls):
                    return gold_calls[step]
                return {"role": "assistant", "content": f"Final Answer: #{variables - 2}"}

            return {"empty": empty, "wrong": ScriptedPlayer(short)}
        start = next(iter(sample["entities"].values()))
        gold_relation = sample["actions"][1].split(",", 1)[1].rstrip(")")

        def other_relation(step: int, obs: list[Message]) -> Message:
            if step == 0:
                return call("get_relations", variable=start)
            if step == 1:
                listed = _listed_relations(obs)
                others = [r for r in listed if r != gold_relation] or [gold_relation]
                return call("get_neighbors", variable=start, relation=others[0])
            return {"role": "assistant", "content": "Final Answer: #0"}

        return {"empty": empty, "wrong": ScriptedPlayer(other_relation)}


def _listed_relations(observation: list[Message]) -> list[str]:
    text = " ".join(str(m.get("content") or "") for m in observation)
    inside = text[text.find("[") + 1 : text.rfind("]")] if "[" in text else ""
    return [r.strip() for r in inside.split(",") if r.strip()]
