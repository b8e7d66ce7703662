"""The LLM mode (Self-Instruct, as the paper): a model proposes tasks from seed examples; the env keeps the valid.

Each request shows the model two seed examples of the task drawn (seeded) from a pool of real samples,
DB: ``dev.jsonl`` with tables cut to five rows; OS: ``train_0317/training.json``; KG: ``kg_rl_all.json``,
and asks for one new task of a given difficulty as a JSON object in the same format. The reply's first JSON
object becomes a candidate. What cannot be read is rejected as ``unparsable``; the rest goes through the
same duplicate checks and env validation as procedural tasks (a DB proposal's label is recomputed from its
own SQL, and a claimed label that disagrees is ``label_mismatch``). Any OpenAI-compatible
``/chat/completions`` endpoint works (vLLM, SGLang, OpenAI); requests reuse the eval's retrying client.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from collections.abc import Iterator
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.messages import Message
from agentrl_envs.eval.errors import AgentStop
from agentrl_envs.eval.openai_agent import OpenAIChatClient
from agentrl_envs.synth.types import Candidate, Rejection, TaskName

__all__ = ["LLMGenerator", "extract_json", "seed_pool"]

SOURCE = "agentrl-synth-llm"
LEVELS = {1: "easy (one simple step)", 2: "medium (two or three steps)", 3: "hard (several steps combined)"}
_SEED_FILES = {
    "db": "data/dbbench/dev.jsonl",
    "os": "data/os_interaction/train_0317/training.json",
    "kg": "data/knowledgegraph/kg_rl_all.json",
}
_FORMAT_NOTES = {
    "db": (
        "Give the table under table.table_info (columns and rows, every cell a string) and, for a question, "
        "the MySQL query that answers it under sql.query; for INSERT/UPDATE/DELETE put the statement in "
        "label[0]. The answer label of a question is computed from your query."
    ),
    "os": (
        "Give create.init.code (a bash script that sets up the files), evaluation.example.code (a bash "
        "script whose output is the answer) and evaluation.check (use [null, a python check script] to "
        "compare the answer with the example's output)."
    ),
    "kg": (
        "Give the entities (name -> Freebase id), the actions (get_relations, get_neighbors, intersection, "
        "get_attributes, argmax, argmin, count; variables #0, #1, ...) and the answer list."
    ),
}


def seed_pool(data: DataRoot, task: str) -> list[dict[str, Any]]:
    """The real samples seed examples are drawn from (DB tables cut to five rows to keep prompts short)."""
    relative = _SEED_FILES[task]
    rows = data.jsonl(relative) if relative.endswith(".jsonl") else list(data.json(relative))
    if task != "db":
        return rows
    pool = []
    for row in rows:
        row = json.loads(json.dumps(row))
        info = row["table"]["table_info"]
        info["rows"] = info["rows"][:5]
        pool.append(row)
    return pool


def extract_json(text: str) -> dict[str, Any] | None:
    """The first JSON object in a reply (inside a ```json fence or bare), or ``None``."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.DOTALL)
    candidates = [fenced.group(1)] if fenced else []
    start = text.find("{")
    if start >= 0:
        candidates.append(text[start:])
    decoder = json.JSONDecoder()
    for chunk in candidates:
        try:
            value, _ = decoder.raw_decode(chunk)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


class LLMGenerator:
    """Proposals from an OpenAI-compatible endpoint (see the module docstring)."""

    def __init__(
        self,
        task: TaskName,
        data: DataRoot,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        seed: int = 0,
        temperature: float = 1.0,
        examples_per_prompt: int = 2,
    ) -> None:
        """Prepare the seed pool and the client.

        Args:
            task: ``db``, ``os`` or ``kg``.
            data: The data root (seed examples, and the DB description wording).
            base_url: The API root, e.g. ``http://127.0.0.1:8000/v1``.
            model: The model to ask.
            api_key: Bearer key, if the endpoint needs one.
            seed: Seeds the choice of examples (and is sent as the request's ``seed``).
            temperature: Sampling temperature of the proposals.
            examples_per_prompt: Seed examples shown per request.
        """
        self.task: TaskName = task
        self.data, self.seed = data, seed
        self.examples_per_prompt = examples_per_prompt
        self.pool = seed_pool(data, task)
        self.client = OpenAIChatClient(
            base_url=base_url, model=model, api_key=api_key, sampling={"temperature": temperature, "seed": seed}
        )
        self._describe: Any = None
        if task == "db":
            from agentrl_envs.synth.db import add_description_template

            self._describe = add_description_template(data)

    def candidates(self, difficulty: int) -> Iterator[Candidate]:
        """Endless proposals of one level (a failed request ends the stream, with the error logged)."""
        rng = random.Random(f"agentrl-synth-llm:{self.task}:{self.seed}:{difficulty}")
        loop = asyncio.new_event_loop()
        try:
            while True:
                prompt = self.prompt(rng, difficulty)
                try:
                    reply = loop.run_until_complete(self.client.complete(prompt, []))
                except AgentStop as e:
                    yield Candidate(self.task, "llm", difficulty, {}, Rejection("request_failed", str(e)))
                    continue
                yield self._candidate(str(reply.get("content") or ""), difficulty)
        finally:
            loop.run_until_complete(self.client.aclose())
            loop.close()

    def prompt(self, rng: random.Random, difficulty: int) -> list[Message]:
        """The Self-Instruct request: seed examples, the format notes and the wanted difficulty."""
        examples = rng.sample(self.pool, min(self.examples_per_prompt, len(self.pool)))
        shown = "\n\n".join(f"Example {i + 1}:\n{json.dumps(e, ensure_ascii=False)}" for i, e in enumerate(examples))
        text = (
            f"Here are examples of training tasks for an agent benchmark ({self.task}).\n\n{shown}\n\n"
            f"Write one NEW task in exactly the same JSON format, different from the examples, of "
            f"{LEVELS[difficulty]} difficulty. {_FORMAT_NOTES[self.task]} Reply with the JSON object only."
        )
        return [{"role": "user", "content": text}]

    def _candidate(self, text: str, difficulty: int) -> Candidate:
        sample = extract_json(text)
        if sample is None:
            return Candidate(self.task, "llm", difficulty, {}, Rejection("unparsable", text[:200]))
        sample = self._normalize(sample)
        sample["source"], sample["difficulty"] = SOURCE, difficulty
        return Candidate(self.task, "llm", difficulty, sample)

    def _normalize(self, sample: dict[str, Any]) -> dict[str, Any]:
        """Fill the bookkeeping fields a DB proposal may leave out (headers, description, placeholders)."""
        if self.task != "db" or not isinstance(sample.get("table"), dict):
            return sample
        table = sample["table"]
        try:
            heads = [str(c["name"]) for c in table["table_info"]["columns"]]
        except (KeyError, TypeError):
            return sample
        sample.setdefault("heads", heads)
        sample.setdefault("add_description", self._describe(str(table.get("table_name", "")), heads))
        for key in ("evaluation", "example"):
            sample.setdefault(key, "")
        sample.setdefault("create", {"database": "synth", "init": "synth_init.sql"})
        return sample
