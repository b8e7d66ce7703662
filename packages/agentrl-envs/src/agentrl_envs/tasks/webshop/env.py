"""``AgentBench/WebShop-v0``: shop for what an instruction asks for, with ``search_action`` and ``click_action``.

Faithful to AgentBench-FC's ``WebShop`` task: its system prompt, tools and message templates (read from the
data root), 20 rounds, only the first tool call of a reply is executed, ``search_action(keywords)`` becomes
``search[keywords]`` and ``click_action(value)`` becomes ``click[value]``, an action the page cannot take
changes nothing, and the reward is upstream's purchase reward at Buy Now (0 if nothing is bought). The score
is that reward; success means a reward of exactly 1.

Where upstream leaves the chat without an answer to a tool call (an unparsable call, an unknown tool,
extra calls in one reply), this env answers with a tool message so transcripts stay valid for OpenAI-style
APIs; the wording is upstream's where it has one. See ``docs/envs/webshop.md`` for every difference.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from agentrl_envs.core.env import Fidelity, ToolEnv, Turn
from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.messages import AssistantMessage, Message, system_message, tool_message, user_message
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.core.tools import CheckedCall
from agentrl_envs.tasks.webshop.catalogue import DEFAULT_NUM_PRODUCTS, Catalogue, load_catalogue, source_of_backend
from agentrl_envs.tasks.webshop.shop import ShopSession, StepResult

__all__ = ["WebShopEnv"]

TASK_KEY = "webshop"
MAX_ECHOED_ACTION_CHARS = 1000
"""Upstream echoes the whole action in the tool message; a 100 KB search would flood the context."""


class WebShopEnv(ToolEnv):
    """The WebShop task (see the module docstring)."""

    task = "webshop"
    default_max_rounds = 20

    def __init__(
        self,
        *,
        webshop_data: str | Path | None = None,
        num_products: int = DEFAULT_NUM_PRODUCTS,
        catalogue_seed: int = 0,
        show_attrs: bool = False,
        explain_invalid_actions: bool = False,
        backend: str | None = None,
        **kwargs: Any,
    ) -> None:
        """Load the catalogue (upstream's files when present, else the generated one).

        Args:
            webshop_data: Folder with upstream's ``items_shuffle.json``, ``items_ins_v2.json`` and
                ``items_human_ins.json``; defaults to ``<data root>/data/webshop`` when those exist there.
            num_products: Size of the generated catalogue (only without upstream data).
            catalogue_seed: Seed of the generated catalogue and of upstream's unseeded price draws.
            show_attrs: Show the Attributes sub-page button (upstream's ``show_attrs``, off in AgentBench).
            explain_invalid_actions: Prefix the observation after an action the page could not take with why
                (upstream just repeats the page); off by default for fidelity.
            backend: ``None`` (upstream's files when present, else generated), ``"upstream-data"`` or
                ``"generated"`` to insist on one.
            **kwargs: ``split``, ``mode``, ``data_root``, ``max_rounds``, ``render_mode`` (see :class:`ToolEnv`).
        """
        source = source_of_backend(backend)
        if num_products < 1:
            raise EnvError(f"num_products must be positive, got {num_products}.")
        super().__init__(**kwargs)
        self.prompts = self.data.prompts(TASK_KEY)
        self.show_attrs = show_attrs
        self.explain_invalid_actions = explain_invalid_actions
        self.catalogue: Catalogue = load_catalogue(
            self.data.path,
            webshop_data=webshop_data,
            num_products=num_products,
            seed=catalogue_seed,
            source=source,
        )
        self.goal_indices = self.catalogue.split_goals(self.split)
        self.session: ShopSession | None = None
        self._purchase_note: str | None = None

    def step(self, action: Any) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Apply one assistant message (see :meth:`ToolEnv.step`).

        After Buy Now the shop is closed: a further action is answered with a message saying so (reward 0,
        still terminated) rather than an exception, as a shop page would answer a late click.
        """
        if self._purchase_note is not None and self.status is SampleStatus.COMPLETED:
            info = {**self._last_info, "invalid_action": self._purchase_note}
            return self._observe([user_message(self._purchase_note)]), 0.0, True, False, info
        return super().step(action)

    # ----------------------------------------------------------------- ToolEnv hooks

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return list(self.data.task_config(TASK_KEY)["default"]["parameters"]["tools"])

    def num_samples(self) -> int:
        """Goals in the split (200 for test)."""
        return len(self.goal_indices)

    @property
    def fidelity(self) -> Fidelity:
        """``upstream`` on upstream's product data, ``emulated`` on the generated catalogue."""
        return "upstream" if self.catalogue.source == "upstream" else "emulated"

    @property
    def backend_name(self) -> str:
        """``upstream-data`` or ``generated`` (which catalogue is in use)."""
        return "upstream-data" if self.catalogue.source == "upstream" else "generated"

    def _start(self, index: int) -> list[Message]:
        goal = self.catalogue.goals[self.goal_indices[index]]
        self._purchase_note = None
        self.session = ShopSession(self.catalogue, goal, show_attrs=self.show_attrs)
        first = self.prompts["first_user_template"].format(
            observation=self.session.observation, available_actions=self.session.available_actions()
        )
        return [system_message(self.prompts["system_prompt"]), user_message(first)]

    def _respond(self, message: AssistantMessage) -> Turn:
        session = self._session()
        if not message.tool_calls:
            text = self.prompts["user_observation_template"].format(
                observation=self.prompts["no_tool_call_observation"],
                available_actions=session.available_actions(),
            )
            return self._limit_or(Turn([user_message(text)]), None)
        first, *extra = message.tool_calls
        ignored = [
            tool_message("Only the first tool call of a reply is executed; this one was not.", c.id) for c in extra
        ]
        checked = self.toolbox.check(first)
        if not checked.ok:
            text = f"{self.prompts['invalid_tool_call_message']} {checked.detail}"
            return self._limit_or(
                Turn([tool_message(text, first.id), *ignored], info={"invalid_tool_call": text}), first.id
            )
        action = self._action(checked)
        result = session.step(action)
        if result.done:
            self._purchase_note = session.ended_message()
        turn = self._turn(action, result, first.id)
        turn.messages += ignored
        return turn if result.done else self._limit_or(turn, first.id)

    def _finish(self) -> None:
        self.session = None

    # ----------------------------------------------------------------- helpers

    def _session(self) -> ShopSession:
        if self.session is None:
            raise EnvError("No WebShop session is running; call reset() first.")
        return self.session

    def _action(self, checked: CheckedCall) -> str:
        if checked.name == "search_action":
            return self.prompts["search_action_template"].format(keywords=checked.arguments["keywords"])
        return self.prompts["click_action_template"].format(value=checked.arguments["value"])

    def _turn(self, action: str, result: StepResult, call_id: str) -> Turn:
        session = self._session()
        observation = session.observation
        info: dict[str, Any] = {"action": _clip(action)}
        if not result.valid:
            info["invalid_action"] = result.problem
            if self.explain_invalid_actions:
                observation = f"Invalid action: {result.problem}\n{observation}"
        text = self.prompts["tool_result_template"].format(
            action=_clip(action), observation=observation, available_actions=session.available_actions()
        )
        if not result.done:
            return Turn([tool_message(text, call_id)], info=info)
        reward_info = session.reward
        assert reward_info is not None and session.purchased is not None
        info.update(
            reward_info=asdict(reward_info),
            purchased_asin=session.purchased.asin,
            purchased_options=session.options,
            goal_asin=session.goal.asin,
            success=reward_info.reward == 1.0,
        )
        return Turn([tool_message(text, call_id)], SampleStatus.COMPLETED, reward=result.reward, info=info)

    def _limit_or(self, turn: Turn, call_id: str | None) -> Turn:
        """At the last round upstream answers with 'Task limit reached.' instead of the next observation."""
        if self._round < self.max_rounds:
            return turn
        limit = self.prompts["task_limit_message"]
        closing = tool_message(limit, call_id) if call_id is not None else user_message(limit)
        extra = [m for m in turn.messages[1:] if m["role"] == "tool"]
        return Turn([closing, *extra], info={**turn.info, "success": False})


def _clip(action: str) -> str:
    if len(action) <= MAX_ECHOED_ACTION_CHARS:
        return action
    return f"{action[:MAX_ECHOED_ACTION_CHARS]}... ({len(action)} characters, cut)"
