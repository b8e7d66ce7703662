"""``AgentBench/KG-v0``: answer Freebase questions with seven graph tools, as AgentBench-FC's KG task.

The agent builds variables with ``get_neighbors``, ``intersection``, ``argmax``/``argmin`` and ``count``
(after exploring with ``get_relations`` and ``get_attributes``) and ends by writing ``Final Answer: #k``
in plain text, as upstream. Reward is 1 when the variable's answer set equals the gold set, ``score`` is
their F1. Queries run on the offline graph in process (default) or on a SPARQL endpoint; see
``docs/envs/kg.md``.
"""

from __future__ import annotations

import logging
import os
import re
from functools import cached_property
from typing import Any, ClassVar, Literal, get_args

from agentrl_envs.core.env import Fidelity, ToolEnv, Turn
from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.messages import AssistantMessage, Message, system_message, tool_message, user_message
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.core.tools import ToolCallError
from agentrl_envs.tasks.kg.api import KGApi, Rules, ToolError, ToolResult
from agentrl_envs.tasks.kg.backends import OFFLINE_GRAPH_IRI, InProcessBackend, KGBackend, SparqlBackend
from agentrl_envs.tasks.kg.build import load_offline_graphs
from agentrl_envs.tasks.kg.data import KGSample, load_samples
from agentrl_envs.tasks.kg.grader import f1_score
from agentrl_envs.tasks.kg.ontology import load_ontology
from agentrl_envs.tasks.kg.program import QueryError, Variable

__all__ = ["ANSWER_TOOL", "OFFLINE_GRAPH_IRI", "KGEnv"]

ANSWER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "submit_answer",
        "description": "Submit the variable that answers the question, e.g. '#3'. Ends the episode.",
        "parameters": {
            "type": "object",
            "properties": {"variable": {"type": "string", "description": "The answer variable, '#' and its id."}},
            "required": ["variable"],
            "additionalProperties": False,
        },
    },
}

Backend = Literal["inprocess", "sparql", "virtuoso"]

logger = logging.getLogger(__name__)


class KGEnv(ToolEnv):
    """The KG task (see the module docstring and DESIGN.md's environment contract).

    Args:
        backend: ``inprocess`` (the offline graph, embedded), ``sparql`` (the endpoint at ``sparql_url``) or
            ``virtuoso`` (a private Virtuoso this process starts and loads with the offline graphs, then
            ``sparql`` on it; needs Debian's ``virtuoso-opensource-7-bin``).
        sparql_url: The SPARQL endpoint for the ``sparql`` backend.
        sparql_graph: Graph IRI template (``{split}``, ``{index}``) sent as ``default-graph-uri``; the default
            addresses the offline graphs as :mod:`agentrl_envs.tasks.kg.virtuoso` loads them. ``None`` for a
            real Freebase endpoint.
        one_shot: Put upstream's one-shot example before the question; upstream does for ``test`` only.
        answer_tool: Also offer ``submit_answer(variable)`` for a pure function-calling protocol.
        rules: ``upstream`` (default) or ``lenient`` (see :data:`~agentrl_envs.tasks.kg.api.Rules`).
        seed: Seed of the offline graph build.
        train_file: A JSON list of samples (std.json's format) that replaces the ``train`` split's questions,
            e.g. from ``agentrl-envs synth``.
        **kwargs: ``split``, ``mode``, ``data_root``, ``max_rounds``, ``render_mode`` (see :class:`ToolEnv`).
    """

    task = "kg"
    default_max_rounds: ClassVar[int] = 15

    def __init__(
        self,
        *,
        backend: Backend | None = None,
        sparql_url: str | None = None,
        sparql_graph: str | None = OFFLINE_GRAPH_IRI,
        one_shot: bool | None = None,
        answer_tool: bool = False,
        rules: Rules = "upstream",
        seed: int = 0,
        train_file: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        """See the class docstring."""
        backend = backend or ("sparql" if sparql_url else "inprocess")
        if backend not in get_args(Backend):
            raise EnvError(f"Unknown KG backend {backend!r}; choose 'inprocess', 'sparql' or 'virtuoso'.")
        if backend == "sparql" and not sparql_url:
            raise EnvError("The sparql backend needs sparql_url=..., e.g. 'http://127.0.0.1:8890/sparql'.")
        if rules not in get_args(Rules):
            raise EnvError(f"Unknown rules {rules!r}; choose 'upstream' or 'lenient'.")
        self._backend_kind: Backend = backend
        self.sparql_url = sparql_url
        self.sparql_graph = sparql_graph
        self.answer_tool = answer_tool
        self.rules: Rules = rules
        self.seed = seed
        self.train_file = train_file
        self._one_shot = one_shot
        self.api: KGApi | None = None
        self._sample: KGSample | None = None
        self._sparql_client: Any = None
        self._virtuoso: Any = None
        super().__init__(**kwargs)
        self.prompts = self.data.prompts("kg")
        self.ontology = load_ontology(self.data)
        self.samples = load_samples(self.data, self.split, train_file)
        self.one_shot = self.split == "test" if one_shot is None else one_shot

    # ----------------------------------------------------------------- ToolEnv hooks

    def _tool_schemas(self) -> list[dict[str, Any]]:
        tools = list(self.data.prompts("kg")["tools"])
        return tools + [ANSWER_TOOL] if self.answer_tool else tools

    def num_samples(self) -> int:
        """How many samples the split has."""
        return len(self.samples)

    @property
    def fidelity(self) -> Fidelity:
        """``upstream`` on a SPARQL endpoint (upstream's engine), ``emulated`` in process."""
        return "emulated" if self._backend_kind == "inprocess" else "upstream"

    @property
    def backend_name(self) -> str:
        """``inprocess``, ``sparql`` or ``virtuoso``."""
        return self._backend_kind

    def _start(self, index: int) -> list[Message]:
        sample = self.samples[index]
        self._sample = sample
        self.api = KGApi(self._make_backend(index), self.ontology, self.rules)
        max_rounds = self.max_rounds
        messages = [system_message(self.prompts["system_prompt_template"].format(max_round=max_rounds))]
        if self.one_shot:
            messages += [dict(m) for m in self.prompts["one_shot_messages"]]
        names = self.prompts["entities_separator"].join(sample.entities)
        messages.append(
            user_message(self.prompts["first_user_template"].format(question=sample.question, entities=names))
        )
        return messages

    def _respond(self, message: AssistantMessage) -> Turn:
        assert self.api is not None
        if not message.tool_calls:
            return self._final_answer(message.content or "")
        out: list[Message] = []
        for call in message.tool_calls:
            if call.function.name == "submit_answer" and self.answer_tool:
                checked = self.toolbox.check(call)
                if checked.ok:
                    return self._finish_with(str(checked.arguments["variable"]), out)
            text = self._run_call(call)
            out.append(tool_message(text, call.id) if call.id else user_message(text))
        return Turn(out)

    def _finish(self) -> None:
        self.api = None

    def close(self) -> None:
        """End the episode, close the SPARQL client and release a private Virtuoso (the last user stops it)."""
        super().close()
        if self._sparql_client is not None:
            self._sparql_client.close()
            self._sparql_client = None
        if self._virtuoso is not None:
            from agentrl_envs.tasks.kg.virtuoso import release_server

            self._virtuoso = None
            release_server()

    # ----------------------------------------------------------------- tool calls

    def _run_call(self, call: Any) -> str:
        """Execute one tool call; every failure becomes upstream's wording."""
        p = self.prompts
        checked = self.toolbox.check(call)
        if checked.error is ToolCallError.UNKNOWN_TOOL or checked.name == "submit_answer":
            return p["invalid_function_name_template"].format(function_name=checked.name)
        if checked.error is ToolCallError.MALFORMED_ARGUMENTS:
            return p["tool_error_template"].format(error=checked.detail)
        order = p["tools_param_order"][checked.name]
        if any(name not in checked.arguments for name in order):
            return p["argument_mismatch_template"].format(function_name=checked.name)
        if checked.error is ToolCallError.INVALID_ARGUMENTS:
            return p["tool_error_template"].format(error=checked.detail)
        try:
            args = [self._resolve(checked.arguments[name]) for name in order]
            result: ToolResult = getattr(self.api, checked.name)(*args)
        except ToolError as e:
            return p["tool_error_template"].format(error=e)
        return p["tool_result_template"].format(observation=result.observation)

    def _resolve(self, value: str) -> Variable | str:
        """Upstream's argument rule: ``#k`` is variable k, an entity name its Freebase id, else unchanged."""
        assert self.api is not None and self._sample is not None
        if value.startswith("#"):
            return self._variable(value)
        return self._sample.entities.get(value, value)

    def _variable(self, ref: str) -> Variable:
        assert self.api is not None
        count = len(self.api.variables)
        known = f"the variables so far are #0 to #{count - 1}" if count else "no variable exists yet"
        if not re.fullmatch(r"#\d{1,6}", ref.strip()):
            raise ToolError(f"{_clip(ref)!r} is not a variable; write '#' and its id, e.g. '#0' ({known})")
        index = int(ref.strip()[1:])
        if index >= count:
            raise ToolError(f"variable {ref.strip()} does not exist; {known}")
        return self.api.variables[index]

    # ----------------------------------------------------------------- the final answer

    def _final_answer(self, content: str) -> Turn:
        rule = self.prompts["final_answer"]
        text = content.split(rule["cut_marker"])[0].replace(rule["unescape_from"], rule["unescape_to"])
        found = re.findall(rule["regex"], text)
        if not found:
            return Turn([user_message(self.prompts["no_tool_call_message"])])
        return self._finish_with(f"#{found[0]}", [])

    def _finish_with(self, ref: str, out: list[Message]) -> Turn:
        assert self.api is not None and self._sample is not None
        try:
            variable = self._variable(ref)
            predicted = set(self.api.answer(variable))
        except ToolError as e:
            return Turn(out, SampleStatus.AGENT_VALIDATION_FAILED, info={"error": str(e)})
        except QueryError as e:  # upstream: any error while executing the answer fails validation
            logger.debug("kg sample %s: answer query failed: %s", self.index, e)
            error = f"the knowledge base cannot evaluate the answer variable {ref}"
            return Turn(out, SampleStatus.AGENT_VALIDATION_FAILED, info={"error": error})
        gold = set(self._sample.answers)
        score = f1_score(predicted, gold)
        reward = float(predicted == gold)
        info = {"answer": sorted(predicted)[:100], "num_answers": len(predicted), "num_gold": len(gold)}
        return Turn(out, SampleStatus.COMPLETED, reward=reward, score=score, info=info)

    # ----------------------------------------------------------------- backends

    def _make_backend(self, index: int) -> KGBackend:
        if self._backend_kind == "inprocess":
            return InProcessBackend(self._graphs.graphs[index])
        import httpx

        if self._backend_kind == "virtuoso":
            self._start_virtuoso()
        if self._sparql_client is None:
            self._sparql_client = httpx.Client(timeout=30.0)
        graph = self.sparql_graph.format(split=self.split, index=index) if self.sparql_graph else None
        assert self.sparql_url is not None
        return SparqlBackend(self.sparql_url, default_graph=graph, client=self._sparql_client)

    def _start_virtuoso(self) -> None:
        """Take the process's private Virtuoso and load this split's graphs unless they are loaded already."""
        from agentrl_envs.tasks.kg.virtuoso import acquire_server

        if self._virtuoso is None:
            self._virtuoso = acquire_server()
            self.sparql_url, self.sparql_graph = self._virtuoso.url, OFFLINE_GRAPH_IRI
        self._virtuoso.ensure_loaded(
            self.split, (str(self.data.path), self.seed, str(self.train_file)), lambda: self._graphs.graphs
        )

    @cached_property
    def _graphs(self) -> Any:
        return load_offline_graphs(self.data, self.split, seed=self.seed, train_file=self.train_file)


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
