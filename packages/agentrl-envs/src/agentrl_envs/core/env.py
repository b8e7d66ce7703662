"""``ToolEnv``: the Gymnasium base class every AgentBench task builds on.

A task supplies four hooks: how many samples a split has, how an episode starts (its first messages), how
it answers one assistant message (a :class:`Turn`), and how its resources are released. The base class owns
everything tasks share: parsing actions, round limits, the AgentBench status vocabulary, the ``info``
fields, text mode, async twins, and the rule that an infrastructure fault ends the episode as
``task error`` with ``infra_error=True`` instead of escaping ``step``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import gymnasium as gym
from gymnasium.error import ResetNeeded

from agentrl_envs.core.bounded_json import BoundedJSONError, raw_decode_bounded
from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.errors import EnvError, InfraError
from agentrl_envs.core.messages import AssistantMessage, FunctionCall, Message, ToolCall, parse_action
from agentrl_envs.core.spaces import ActionSpace, MessagesSpace
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.core.tools import ToolBox

__all__ = ["Fidelity", "ToolEnv", "Turn"]

logger = logging.getLogger(__name__)

Mode = Literal["fc", "text"]
Fidelity = Literal["upstream", "emulated"]
"""``upstream``: the same engine as AgentBench (e.g. a real MySQL-compatible server); ``emulated``: an
embedded stand-in whose known differences the task's docs list."""

_logged_faults: set[tuple[str, str]] = set()
_logged_faults_lock = threading.Lock()


def _log_step_fault(task: str, index: int | None, error: Exception) -> None:
    """Log a step's infrastructure fault with its traceback the first time its kind appears in this process.

    A broken backend fails every step the same way; one traceback per (task, error type) says why, and the
    rest (all in ``info["error"]`` and ``info["traceback"]``) go to the debug log instead of flooding it.
    """
    kind = (task, type(error).__name__)
    with _logged_faults_lock:
        is_new = kind not in _logged_faults
        _logged_faults.add(kind)
    if is_new:
        logger.exception(
            "%s sample %s: infrastructure error in step (further %s errors of this task are logged at debug level)",
            task,
            index,
            kind[1],
        )
    else:
        logger.debug("%s sample %s: infrastructure error in step", task, index, exc_info=error)


_TEXT_ACTION = re.compile(r"^\s*Action:\s*([A-Za-z_][\w.-]*)\s*$", re.MULTILINE)


@dataclass(slots=True)
class Turn:
    """A task's answer to one assistant message."""

    messages: list[Message] = field(default_factory=list[Message])
    status: SampleStatus = SampleStatus.RUNNING
    reward: float = 0.0
    score: float | None = None
    info: dict[str, Any] = field(default_factory=dict[str, Any])


class ToolEnv(gym.Env[list[Message], Any], ABC):
    """Base class of the AgentBench-FC task environments.

    Observations are lists of new OpenAI chat messages; actions are assistant messages (dict, JSON string,
    or text in text mode). See DESIGN.md's environment contract.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"]}  # an instance variable, as Gymnasium's Env declares it

    task: ClassVar[str]
    """Short task name: ``alfworld``, ``db``, ``kg``, ``os`` or ``webshop``."""
    splits: ClassVar[tuple[str, ...]] = ("test", "dev", "train")
    default_max_rounds: ClassVar[int]
    nonblocking: bool = False
    """Whether ``reset`` and ``step`` never block (microseconds, no I/O): a controller worker then calls them on its
    event loop instead of a thread. Leave it ``False`` for anything that queries a database or runs a command."""

    def __init__(
        self,
        *,
        split: str = "test",
        mode: Mode = "fc",
        data_root: str | None = None,
        max_rounds: int | None = None,
        render_mode: str | None = None,
    ) -> None:
        """Set up the task for one split.

        Args:
            split: ``test``, ``dev`` or ``train``.
            mode: ``fc`` (OpenAI function calling) or ``text`` (actions and observations as plain text).
            data_root: The AgentBench data root; defaults to ``$AGENTRL_DATA_ROOT``.
            max_rounds: Assistant turns before the episode ends as ``task limit reached``; defaults to upstream's.
            render_mode: ``None`` or ``"ansi"`` (the transcript as text).
        """
        if split not in self.splits:
            raise EnvError(f"Unknown split {split!r} for task {self.task!r}; choose one of {list(self.splits)}.")
        if mode not in ("fc", "text"):
            raise EnvError(f"Unknown mode {mode!r}; choose 'fc' (function calling) or 'text'.")
        if max_rounds is not None and max_rounds < 1:
            raise EnvError(f"max_rounds must be at least 1, got {max_rounds}.")
        if render_mode not in (None, "ansi"):
            raise EnvError(f"Unknown render_mode {render_mode!r}; only 'ansi' is supported.")
        self.split = split
        self.mode: Mode = mode
        self.render_mode = render_mode
        self._data_root = data_root
        self._data: DataRoot | None = None
        self.max_rounds = max_rounds or self.default_max_rounds
        self.toolbox = ToolBox(self._tool_schemas())
        self.observation_space = MessagesSpace()
        self.action_space = ActionSpace(self.toolbox.schemas)
        self.messages: list[Message] = []
        self._index: int | None = None
        self._round = 0
        self._status = SampleStatus.RUNNING
        self._last_info: dict[str, Any] = {}
        self._closed = False
        """Set first thing by :meth:`close`: a step that fails because another thread closed the env meanwhile (an
        owner stopping while a step runs in a worker thread) is the close's doing, not an infrastructure fault."""

    @property
    def data(self) -> DataRoot:
        """The AgentBench data root, resolved on first use: a task that reads none needs none."""
        if self._data is None:
            self._data = self._find_data(self._data_root)
        return self._data

    @property
    def data_in_use(self) -> DataRoot | None:
        """The data root if the task has read one so far, else ``None`` (asking never resolves or fetches one)."""
        return self._data

    # ----------------------------------------------------------------- task hooks

    def _find_data(self, data_root: str | None) -> DataRoot:
        """The task's data: the AgentBench data root (a task built on other data overrides this)."""
        return DataRoot.find(data_root)

    @abstractmethod
    def _tool_schemas(self) -> list[dict[str, Any]]:
        """The task's OpenAI tool schemas (read from the data root)."""

    @abstractmethod
    def num_samples(self) -> int:
        """How many samples the split has."""

    @abstractmethod
    def _start(self, index: int) -> list[Message]:
        """Start an episode on sample ``index``; return its first messages (system + user)."""

    @abstractmethod
    def _respond(self, message: AssistantMessage) -> Turn:
        """Answer one assistant message."""

    def _finish(self) -> None:  # noqa: B027 - optional hook
        """Release the episode's resources; called once per episode, whatever its end."""

    @property
    def fidelity(self) -> Fidelity:
        """How close this configuration is to upstream's engine."""
        return "upstream"

    @property
    def backend_name(self) -> str | None:
        """The backend in use, for tasks that have several."""
        return None

    # ----------------------------------------------------------------- Gymnasium API

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The task's OpenAI tool schemas."""
        return self.toolbox.schemas

    @property
    def index(self) -> int | None:
        """The sample index of the current episode."""
        return self._index

    @property
    def status(self) -> SampleStatus:
        """The current episode's status."""
        return self._status

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode.

        Args:
            seed: Seeds the choice of sample when ``options`` gives no index.
            options: ``{"index": i}`` picks sample ``i`` of the split.

        Returns:
            The first messages (system + user) and ``info``.

        Raises:
            EnvError: If the index is out of range.
            InfraError: If the environment could not be set up (the episode never started).
        """
        super().reset(seed=seed)
        self._end_episode()
        index = self._choose_index(options)
        self._index, self._round, self._status = index, 0, SampleStatus.RUNNING
        try:
            first = self._start(index)
        except InfraError:
            self._status = SampleStatus.TASK_ERROR
            self._end_episode()
            raise
        except Exception as e:
            self._status = SampleStatus.TASK_ERROR
            self._end_episode()
            raise InfraError(f"{self.task}: could not start sample {index}: {e}") from e
        self.messages = list(first)
        self._last_info = self._info(score=0.0, infra_error=False)
        return self._observe(first), dict(self._last_info)

    def step(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Apply one assistant message.

        Returns:
            ``(new_messages, reward, terminated, truncated, info)``; bad model output yields messages that say
            what was wrong, infrastructure faults end the episode with ``info["infra_error"] = True``.
        """
        if self._index is None:
            raise ResetNeeded("Call reset() before step().")
        if self._status.is_terminal:
            raise EnvError(f"The episode has ended with status {self._status.value!r}; call reset() to start another.")
        message = parse_action(action, mode=self.mode)
        if self.mode == "text":
            message = message.model_copy(update={"tool_calls": parse_text_tool_calls(message.content or "")})
        self.messages.append(message.to_dict())
        self._round += 1
        infra_error = False
        try:
            turn = self._respond(message)
        except Exception as e:  # task boundary: a fault of ours must not look like the agent's failure
            error = f"{type(e).__name__}: {e}"
            if self._closed:
                logger.debug("%s sample %s: step ended by close() in another thread: %s", self.task, self._index, error)
                error = f"the environment was closed while this step ran ({error})"
            else:
                _log_step_fault(self.task, self._index, e)
            turn = Turn(
                status=SampleStatus.TASK_ERROR,
                info={"error": error, "traceback": "".join(traceback.format_exception(e))},
            )
            infra_error = True
        status = turn.status
        if status is SampleStatus.RUNNING and self._round >= self.max_rounds:
            status = SampleStatus.TASK_LIMIT_REACHED
        self._status = status
        self.messages.extend(turn.messages)
        score = turn.score if turn.score is not None else turn.reward
        self._last_info = self._info(score=score, infra_error=infra_error, **turn.info)
        if status.is_terminal:
            self._end_episode()
        terminated = status.is_terminated
        truncated = status.is_terminal and not terminated
        return self._observe(turn.messages), float(turn.reward), terminated, truncated, dict(self._last_info)

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """Async twin of :meth:`reset` (runs it in a worker thread)."""
        return await asyncio.to_thread(self.reset, seed=seed, options=options)

    async def astep(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Async twin of :meth:`step` (runs it in a worker thread)."""
        return await asyncio.to_thread(self.step, action)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        await asyncio.to_thread(self.close)

    def render(self) -> str | None:
        """The transcript so far as text, in ``ansi`` render mode."""
        if self.render_mode != "ansi":
            return None
        lines: list[str] = []
        for m in self.messages:
            lines.append(f"[{m['role']}] {m.get('content') or ''}")
            calls: list[dict[str, Any]] = m.get("tool_calls") or []
            for call in calls:
                lines.append(f"  -> {call['function']['name']}({call['function']['arguments']})")
        return "\n".join(lines)

    def close(self) -> None:
        """End any running episode and release its resources."""
        self._closed = True
        self._end_episode()
        super().close()

    # ----------------------------------------------------------------- internals

    def _choose_index(self, options: dict[str, Any] | None) -> int:
        total = self.num_samples()
        index = (options or {}).get("index")
        if index is None:
            return int(self.np_random.integers(0, total))
        if isinstance(index, bool) or not isinstance(index, int):
            raise EnvError(f"options['index'] must be an int, got {type(index).__name__}.")
        if not 0 <= index < total:
            raise EnvError(f"Index {index} is out of range for {self.task}/{self.split}: it has {total} samples.")
        return index

    def _end_episode(self) -> None:
        if self._index is None:
            return
        try:
            self._finish()
        except Exception:  # cleanup must not mask the episode's outcome
            logger.exception("%s sample %s: error while releasing episode resources", self.task, self._index)

    def _info(self, *, score: float, infra_error: bool, **extra: Any) -> dict[str, Any]:
        info = {
            "task": self.task,
            "split": self.split,
            "index": self._index,
            "tools": self.tools,
            "fidelity": self.fidelity,
            "status": self._status.value,
            "score": float(score),
            "infra_error": infra_error,
            "round": self._round,
        }
        if self.backend_name is not None:
            info["backend"] = self.backend_name
        info.update(extra)
        return info

    def _observe(self, messages: list[Message]) -> list[Message]:
        """In text mode, tool results are shown as user messages (no tool role without function calling)."""
        if self.mode == "fc":
            return [dict(m) for m in messages]
        return [{"role": "user", "content": m["content"]} if m["role"] == "tool" else dict(m) for m in messages]


def parse_text_tool_calls(text: str) -> list[ToolCall]:
    """Read tool calls written as text: a line ``Action: <tool>`` followed by a JSON object of arguments.

    Text mode gives tool-less models the same tools: each ``Action:`` line opens a call whose arguments
    are the first JSON object after it (``{}`` if none). Text without ``Action:`` lines has no calls.
    """
    calls: list[ToolCall] = []
    matches = list(_TEXT_ACTION.finditer(text))
    for number, match in enumerate(matches):
        end = matches[number + 1].start() if number + 1 < len(matches) else len(text)
        body = text[match.end() : end]
        start = body.find("{")
        arguments = "{}"
        if start >= 0:
            try:
                _, length = raw_decode_bounded(body[start:])
                arguments = body[start : start + length]
            except BoundedJSONError:  # the tool check parses the raw text again and says what is wrong
                arguments = body[start:].strip()
        calls.append(ToolCall(id=f"text_{number}", function=FunctionCall(name=match.group(1), arguments=arguments)))
    return calls
