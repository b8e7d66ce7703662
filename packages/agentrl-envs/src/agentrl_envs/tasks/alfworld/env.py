"""``AlfworldEnv``: ALFWorld as a Gymnasium environment (``AgentBench/ALFWorld-v0``), AgentBench-FC's loop.

An episode plays one game of the split on TextWorld's PDDL engine with upstream's 2.1.1 domain and grammar.
The agent acts through ``take_action(action)``; as upstream, the first value of the first tool call's
arguments is the action, whatever the tool's name, and it is lower-cased, cut to its first line and snapped
to the closest admissible command (:mod:`.actions`). The game's answer comes back as a tool message followed
by ``AVAILABLE ACTIONS``. The episode ends when the game is won (reward 1), after 20 turns, or when the last
three raw actions of more than three are identical (upstream's repeat rule; reward 0).

Upstream's quirk is kept: once a turn had no tool call (``agent validation failed``) or an unreadable one
(``agent invalid action``), that status sticks and is what a later win reports, with its reward of 1.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from agentrl_envs.core.bounded_json import BoundedJSONError, loads_bounded
from agentrl_envs.core.env import Mode, ToolEnv, Turn
from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.messages import AssistantMessage, Message, system_message, tool_message, user_message
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.tasks.alfworld.actions import snap_action
from agentrl_envs.tasks.alfworld.engine import EngineState, GameEngine, require_extra
from agentrl_envs.tasks.alfworld.games import GameStore, split_entries
from agentrl_envs.tasks.alfworld.pool import PooledEngine, shared_pool
from agentrl_envs.tasks.alfworld.texts import AlfworldTexts
from agentrl_envs.tasks.alfworld.workers import EngineProcess

__all__ = ["AlfworldEnv"]

CONFIG_NAME = "alfworld"


class AlfworldEnv(ToolEnv):
    """ALFWorld: household tasks in text, one ``take_action`` per turn.

    Example:
        >>> env = gym.make("AgentBench/ALFWorld-v0", split="test")  # doctest: +SKIP
    """

    task: ClassVar[str] = "alfworld"
    default_max_rounds: ClassVar[int] = 20

    def __init__(
        self,
        *,
        split: str = "test",
        mode: Mode = "fc",
        data_root: str | None = None,
        max_rounds: int | None = None,
        render_mode: str | None = None,
        seed: int = 0,
        engine: Literal["process", "inline"] = "process",
        recycle_after: int = 20,
        engine_pool_size: int | None = None,
    ) -> None:
        """Load the split's game list; games are generated (and cached) on their first reset.

        Args:
            split: ``test`` (new_std.json, 109), ``dev`` (dev.json, 20) or ``train`` (train_valid.json, 3150).
            mode: ``fc`` or ``text``.
            data_root: The AgentBench data root.
            max_rounds: Turns per episode; defaults to the config's ``max_step`` (20).
            render_mode: ``None`` or ``"ansi"``.
            seed: The game generator's seed (the same seed gives the same games).
            engine: ``process`` (the engine runs in a child process replaced every ``recycle_after`` episodes,
                so memory stays flat) or ``inline`` (in this process; memory grows with the games played).
            recycle_after: Episodes per engine process.
            engine_pool_size: With ``engine="process"``: share at most this many engine processes between all the
                envs of this process that ask for the same size (:mod:`.pool`), instead of one per env (``None``,
                the default). Use it when many envs run at once, as in training.

        Raises:
            EnvError: For bad options. DataError: If the split list is missing.
            BackendUnavailableError: If the ``alfworld`` extra is not installed.
        """
        require_extra()  # here, not at the first reset, where a missing package would surface far from its cause
        super().__init__(split=split, mode=mode, data_root=data_root, max_rounds=max_rounds, render_mode=render_mode)
        parameters = self.data.task_config(CONFIG_NAME)["default"]["parameters"]
        if max_rounds is None:
            self.max_rounds = int(parameters.get("max_step", self.default_max_rounds))
        self.texts = AlfworldTexts.load(self.data)
        self.paths = split_entries(self.data, split)
        if engine not in ("process", "inline"):
            raise EnvError(f"Unknown engine {engine!r}; choose 'process' or 'inline'.")
        if recycle_after < 1:
            raise EnvError(f"recycle_after must be at least 1, got {recycle_after}.")
        if engine_pool_size is not None and (engine != "process" or engine_pool_size < 1):
            raise EnvError(
                f"engine_pool_size={engine_pool_size!r} needs engine='process' and a size of at least 1 "
                "(or leave it unset for one engine process per env)."
            )
        self.store = GameStore(self.data, seed=seed)
        self.engine_mode = engine
        self.recycle_after = recycle_after
        self.engine_pool_size = engine_pool_size
        self._engine: GameEngine | EngineProcess | PooledEngine | None = None
        self._admissible: list[str] = []
        self._outputs: list[str] = []
        self._finish_reason = SampleStatus.COMPLETED

    # ----------------------------------------------------------------- ToolEnv hooks

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return list(self.data.task_config(CONFIG_NAME)["default"]["parameters"]["tools"])

    def num_samples(self) -> int:
        """Games in the split."""
        return len(self.paths)

    def _start(self, index: int) -> list[Message]:
        if self._engine is None and self.engine_pool_size is not None:
            self._engine = shared_pool(self.engine_pool_size, recycle_after=self.recycle_after).engine()
        elif self._engine is None and self.engine_mode == "process":
            self._engine = EngineProcess(recycle_after=self.recycle_after)
        elif self._engine is None:
            self._engine = GameEngine()
        path = self.paths[index]
        game = self.store.cached(path)
        if game is None and isinstance(self._engine, EngineProcess | PooledEngine):
            game = self._engine.generate(str(self.data.path), self.store.seed, path)
        elif game is None:
            game = self.store.game(path)
        state = self._engine.reset(game)
        self._admissible = state.admissible_commands
        self._outputs = []
        self._finish_reason = SampleStatus.COMPLETED
        first = self.texts.first_user_message(state.feedback, state.admissible_commands)
        return [system_message(self.texts.system_prompt), user_message(first)]

    def _respond(self, message: AssistantMessage) -> Turn:
        if not message.tool_calls:
            self._finish_reason = SampleStatus.AGENT_VALIDATION_FAILED
            return Turn(messages=[user_message(self.texts.no_tool_call)], info=self._turn_info())
        call = message.tool_calls[0]
        output = _first_argument(call.function.arguments)
        if output is None:
            self._finish_reason = SampleStatus.AGENT_INVALID_ACTION
            info = self._turn_info(tool_call_error=self.toolbox.check(call).detail or "unreadable arguments")
            return Turn(messages=[user_message(self.texts.invalid_tool_call)], info=info)
        snap = snap_action(output, self._admissible, min_bleu=self.texts.min_bleu)
        assert self._engine is not None
        state = self._engine.step(snap.command)
        self._admissible = state.admissible_commands
        self._outputs.append(output)
        reply = tool_message(self.texts.tool_result(state.feedback, state.admissible_commands), call.id)
        checked = self.toolbox.check(call)
        info = self._turn_info(state, action=snap.to_info())
        if not checked.ok:  # upstream plays the first argument anyway; say what a strict check would reject
            info["tool_call_error"] = checked.detail
        window = self.texts.repeat_window
        if len(self._outputs) > window and len(set(self._outputs[-window:])) == 1:
            return Turn(messages=[reply], status=SampleStatus.AGENT_INVALID_ACTION, info=info)
        if state.won:
            return Turn(messages=[reply], status=self._finish_reason, reward=1.0, score=1.0, info=info)
        return Turn(messages=[reply], info=info)

    def _finish(self) -> None:
        if isinstance(self._engine, PooledEngine):  # free the pooled child's engine for other envs' games
            self._engine.release()

    def _turn_info(self, state: EngineState | None = None, **extra: Any) -> dict[str, Any]:
        info: dict[str, Any] = {
            "won": bool(state and state.won),
            "admissible_commands": list(self._admissible),
            "game": self.paths[self._index] if self._index is not None else None,
        }
        if state is not None:
            info["observation"] = self.texts.process_observation(state.feedback)
            info["invalid_action"] = self.texts.invalid_action_marker in info["observation"]
        info.update(extra)
        return info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode on a game of the split (see :meth:`ToolEnv.reset`); ``info`` adds the game."""
        messages, info = super().reset(seed=seed, options=options)
        info.update(self._turn_info())
        self._last_info = dict(info)
        return messages, info

    def close(self) -> None:
        """End any episode and release the engine."""
        super().close()
        if self._engine is not None:
            engine, self._engine = self._engine, None
            engine.close()


def _first_argument(arguments: str) -> str | None:
    """Upstream's reading of a call: the first value of its JSON arguments, which must be a string."""
    try:
        values = list(loads_bounded(arguments).values())
    except (BoundedJSONError, AttributeError):  # not JSON (or beyond its bounds), or not an object
        return None
    if not values or not isinstance(values[0], str):
        return None
    return values[0]
