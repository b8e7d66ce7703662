"""``BFCLEnv``: a BFCL multi-turn category as a Gymnasium environment (``AgentBench/BFCL-Base-v0``, ...).

An episode plays one BFCL entry the way BFCL's function-calling inference loop does. The first user turn
comes with reset; each assistant message's tool calls run in order on the entry's backends (BFCL's own
Python classes, stepped by BFCL's executor) and their results come back as tool messages; an assistant
message without tool calls ends the user turn, and the next turn's user message follows. In
``miss_func`` the held-back functions join the tools at their turn, announced by BFCL's user prompt (and
``info["tools"]`` changes). After the last turn BFCL's multi-turn checker grades the recorded calls:
reward and score 1 if it accepts them, else 0, with its verdict in ``info["bfcl"]``. More than BFCL's
``MAXIMUM_STEP_LIMIT`` steps with calls in one turn force-quits the entry, as in BFCL (``task limit
reached``, score 0).
"""

from __future__ import annotations

import json
import logging
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.env import Mode, ToolEnv, Turn
from agentrl_envs.core.errors import DataError
from agentrl_envs.core.messages import AssistantMessage, Message, system_message, tool_message, user_message
from agentrl_envs.core.spaces import ActionSpace
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.core.tools import CheckedCall, ToolCallError
from agentrl_envs.tasks.bfcl.backend import BFCLSession
from agentrl_envs.tasks.bfcl.data import CATEGORIES, BFCLCategory, BFCLSample, function_docs, load_samples
from agentrl_envs.tasks.bfcl.fetch import ensure_bfcl
from agentrl_envs.tasks.bfcl.upstream import BFCLUpstream, load_upstream

__all__ = ["BFCLBaseEnv", "BFCLEnv", "BFCLLongContextEnv", "BFCLMissFuncEnv", "BFCLMissParamEnv", "open_bfcl"]

logger = logging.getLogger(__name__)

TEXT_MODE_PROMPT = (
    "You can call these functions (JSON docs):\n{functions}\n\nTo call one, write a line `Action: <function name>` "
    "followed by a JSON object of its arguments. When you have nothing more to call for the user's request, "
    "answer without an Action line."
)
"""The system message of text mode (ours: BFCL's prompting format is Python call syntax, ours ``Action:``)."""


def open_bfcl(data_root: str | Path | None) -> DataRoot:
    """The BFCL tree: ``data_root`` if given, else the cache (fetched on first use unless ``AGENTRL_OFFLINE=1``).

    Raises:
        DataError: If ``data_root`` is not an extracted BFCL tree, or the cache cannot be filled.
    """
    path = Path(data_root).expanduser() if data_root is not None else ensure_bfcl()
    if not (path / "bfcl_eval" / "data").is_dir():
        raise DataError(
            f"{path} is not a BFCL tree (no bfcl_eval/data); leave data_root unset to use the fetched wheel, "
            "or run `python -m agentrl_envs.tasks.bfcl.fetch`."
        )
    return DataRoot(path.resolve())


class BFCLEnv(ToolEnv):
    """A BFCL multi-turn category; one subclass per category sets :attr:`category`.

    Example:
        >>> env = gym.make("AgentBench/BFCL-Base-v0")  # doctest: +SKIP
    """

    category: ClassVar[BFCLCategory]
    splits: ClassVar[tuple[str, ...]] = ("test",)
    default_max_rounds: ClassVar[int] = 1_000_000
    """Unused: without ``max_rounds`` each sample's bound is its turns times BFCL's step limit (+2)."""

    def __init__(
        self,
        *,
        split: str = "test",
        mode: Mode = "fc",
        data_root: str | None = None,
        max_rounds: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        """Load the category from the BFCL tree.

        Args:
            split: ``test`` (BFCL has one set per category: 200 entries).
            mode: ``fc`` or ``text``.
            data_root: An extracted BFCL tree; default the pinned wheel fetched into ``$AGENTRL_CACHE_DIR``.
            max_rounds: Assistant turns per episode; default enough for BFCL's own per-turn step limit.
            render_mode: ``None`` or ``"ansi"``.
        """
        self._max_rounds_option = max_rounds
        super().__init__(split=split, mode=mode, data_root=data_root, max_rounds=max_rounds, render_mode=render_mode)
        self.samples: list[BFCLSample] = load_samples(self.data.path, self.category)
        self._all_tools = self.toolbox
        """Every function of the multi-turn backends (names are unique across them); episodes offer subsets."""
        self._session: BFCLSession | None = None
        self._callable = self.toolbox
        self._docs: list[dict[str, Any]] = []
        self._revealed: dict[int, list[dict[str, Any]]] = {}
        self._turn = -1
        self._steps = 0

    @cached_property
    def upstream(self) -> BFCLUpstream:
        """BFCL's modules, loaded from the tree."""
        return load_upstream(self.data.path)

    @property
    def step_limit(self) -> int:
        """BFCL's ``MAXIMUM_STEP_LIMIT``: steps with calls in one turn before the entry is force-quit."""
        return int(self.upstream.prompts.MAXIMUM_STEP_LIMIT)

    # ----------------------------------------------------------------- ToolEnv hooks

    def _find_data(self, data_root: str | None) -> DataRoot:
        return open_bfcl(data_root)

    def _tool_schemas(self) -> list[dict[str, Any]]:
        """Every function of the eight multi-turn backends (an episode offers its sample's subset)."""
        folder = self.data.path / "bfcl_eval" / "data" / "multi_turn_func_doc"
        docs = []
        for file_name in self.upstream.backends.MULTI_TURN_FUNC_DOC_FILE_MAPPING.values():
            if (folder / file_name).is_file():  # the memory and web-search docs are not extracted
                docs += self.data.jsonl(f"bfcl_eval/data/multi_turn_func_doc/{file_name}")
        return self.upstream.openai_tools(docs, self.category.name)

    def num_samples(self) -> int:
        """Entries in the category."""
        return len(self.samples)

    def _start(self, index: int) -> list[Message]:
        sample = self.samples[index]
        self._session = BFCLSession(self.upstream, sample, self.category)
        mapping = self.upstream.backends.MULTI_TURN_FUNC_DOC_FILE_MAPPING
        self._docs, self._revealed = function_docs(self.data.path, mapping, sample)
        held_back = [doc for docs in self._revealed.values() for doc in docs]
        # BFCL's executor runs any method of the entry's classes, offered yet or not (miss_func 49's ground
        # truth calls a held-back function before its turn), so calls are checked against all of them.
        self._callable = self._all_tools.subset([doc["name"] for doc in [*self._docs, *held_back]])
        self._offer(self._docs)
        self._turn = -1
        limit = self._max_rounds_option or len(sample.turns) * (self.step_limit + 2)
        self.max_rounds = limit
        first = self._next_turn()
        if self.mode == "text":
            return [system_message(TEXT_MODE_PROMPT.format(functions=json.dumps(self._docs))), *first]
        return first

    def _respond(self, message: AssistantMessage) -> Turn:
        assert self._session is not None
        if not message.tool_calls:
            return self._end_turn()
        checked = [self._callable.check(call) for call in message.tool_calls]
        runnable = [c for c in checked if _refusal(c) is None]
        strings = [self.upstream.call_string(c.name, c.arguments) for c in runnable]
        results = iter(self._session.execute(strings) if strings else [])
        replies = [tool_message(_refusal(c) or next(results), c.id) for c in checked]
        info: dict[str, Any] = {"turn": self._turn}
        if runnable:
            self._steps += 1
            if self._steps > self.step_limit:
                verdict = {"valid": False, "error_type": "multi_turn:force_terminated"}
                info["bfcl"] = self._verdict(verdict)
                return Turn(messages=replies, status=SampleStatus.TASK_LIMIT_REACHED, info=info)
        return Turn(messages=replies, info=info)

    def _finish(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            session.close()

    # ----------------------------------------------------------------- turns

    def _next_turn(self) -> list[Message]:
        """Open the next user turn: its messages, with held-back functions added where BFCL adds them."""
        assert self._session is not None
        self._turn += 1
        self._steps = 0
        self._session.begin_turn()
        messages = [dict(m) for m in self._session.sample.turns[self._turn]]
        if self._turn in self._revealed:
            added = self._revealed[self._turn]
            self._docs = [*self._docs, *added]
            self._offer(self._docs)
            if not messages:
                messages = [user_message(self._additional_functions_prompt(added))]
        return messages

    def _end_turn(self) -> Turn:
        """The assistant stopped calling: the next user turn, or BFCL's verdict after the last one."""
        assert self._session is not None
        if self._turn + 1 < len(self._session.sample.turns):
            messages = self._next_turn()
            return Turn(messages=messages, info={"turn": self._turn})
        verdict = self._verdict(self._session.check())
        reward = 1.0 if verdict["valid"] else 0.0
        info = {"turn": self._turn, "bfcl": verdict}
        return Turn(status=SampleStatus.COMPLETED, reward=reward, score=reward, info=info)

    def _verdict(self, result: dict[str, Any]) -> dict[str, Any]:
        """BFCL's checker result, without its (large, not always JSON-able) details."""
        assert self._session is not None
        return {
            "id": self._session.sample.id,
            "category": self.category.name,
            "valid": bool(result.get("valid")),
            "error_type": result.get("error_type"),
            "error_message": result.get("error_message"),
        }

    def _additional_functions_prompt(self, added: list[dict[str, Any]]) -> str:
        prompts = self.upstream.prompts
        if self.mode == "text":
            return str(
                prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=json.dumps(added))
            )
        return str(prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC)

    def _offer(self, docs: list[dict[str, Any]]) -> None:
        """Make ``docs`` the tools of the episode (``info["tools"]`` and the action space)."""
        self.toolbox = self._all_tools.subset([doc["name"] for doc in docs])
        self.action_space = ActionSpace(self.toolbox.schemas)


def _refusal(call: CheckedCall) -> str | None:
    """Why a call is not executed, or ``None`` if BFCL would execute it.

    BFCL executes any decodable call, schema-valid or not (Python's own error is then the result), so only
    an unknown function and arguments that are not a JSON object are refused here. Argument names must be
    identifiers because BFCL evaluates the call string.
    """
    if call.error in (ToolCallError.UNKNOWN_TOOL, ToolCallError.MALFORMED_ARGUMENTS):
        return f"Error: {call.detail}"
    bad = [key for key in call.arguments if not key.isidentifier()]
    if bad:
        return f"Error: argument names {bad} of {call.name!r} are not parameter names."
    return None


class BFCLBaseEnv(BFCLEnv):
    """BFCL ``multi_turn_base`` (``AgentBench/BFCL-Base-v0``, short name ``bfcl_base``)."""

    task: ClassVar[str] = "bfcl_base"
    category: ClassVar[BFCLCategory] = CATEGORIES["bfcl_base"]


class BFCLMissFuncEnv(BFCLEnv):
    """BFCL ``multi_turn_miss_func`` (``AgentBench/BFCL-MissFunc-v0``): functions arrive at a later turn."""

    task: ClassVar[str] = "bfcl_miss_func"
    category: ClassVar[BFCLCategory] = CATEGORIES["bfcl_miss_func"]


class BFCLMissParamEnv(BFCLEnv):
    """BFCL ``multi_turn_miss_param`` (``AgentBench/BFCL-MissParam-v0``): a turn lacks a needed parameter."""

    task: ClassVar[str] = "bfcl_miss_param"
    category: ClassVar[BFCLCategory] = CATEGORIES["bfcl_miss_param"]


class BFCLLongContextEnv(BFCLEnv):
    """BFCL ``multi_turn_long_context`` (``AgentBench/BFCL-LongContext-v0``): backends return long outputs."""

    task: ClassVar[str] = "bfcl_long_context"
    category: ClassVar[BFCLCategory] = CATEGORIES["bfcl_long_context"]
