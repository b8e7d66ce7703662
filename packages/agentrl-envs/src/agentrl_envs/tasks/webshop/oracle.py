"""The WebShop oracle: search for the goal's product, open it, pick the goal's options, Buy Now.

It reads the goal from the catalogue itself (the same one the env builds from the data root), searches the
target's title, pages through results until the target's asin is clickable, clicks each target option the
page offers, and buys. If the target never shows up it buys the first result, as a scripted baseline would.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import Oracle
from agentrl_envs.tasks.webshop.catalogue import DEFAULT_NUM_PRODUCTS, load_catalogue, source_of_backend
from agentrl_envs.tasks.webshop.pages import END_BUTTON, NEXT_PAGE
from agentrl_envs.tasks.webshop.types import Goal

__all__ = ["WebShopOracle", "available_actions_of"]

_AVAILABLE = re.compile(r"Available Actions:\n(\{.*\})\s*$", re.DOTALL)
MAX_RESULT_PAGES = 5


def available_actions_of(observation: list[Message]) -> dict[str, Any]:
    """The ``Available Actions`` dict printed at the end of the last message (empty if there is none)."""
    for message in reversed(observation):
        match = _AVAILABLE.search(message.get("content") or "")
        if match:
            return ast.literal_eval(match.group(1))
    return {}


class WebShopOracle(Oracle):
    """Plays each goal's target product through the shop."""

    def __init__(
        self,
        *,
        split: str = "test",
        data_root: str | None = None,
        webshop_data: str | Path | None = None,
        num_products: int = DEFAULT_NUM_PRODUCTS,
        catalogue_seed: int = 0,
        backend: str | None = None,
        **options: Any,
    ) -> None:
        """Load the goals (the catalogue, without its search index).

        Args:
            split: The split to play.
            data_root: The AgentBench data root.
            webshop_data: As the env's option of that name.
            num_products: As the env's option of that name.
            catalogue_seed: As the env's option of that name.
            backend: As the env's option of that name.
            **options: Other env options (ignored).
        """
        super().__init__(split=split, data_root=data_root, **options)
        self.catalogue = load_catalogue(
            self.data.path,
            webshop_data=webshop_data,
            num_products=num_products,
            seed=catalogue_seed,
            with_index=False,
            source=source_of_backend(backend),
        )
        self.goal_indices = self.catalogue.split_goals(split)
        self.goal: Goal | None = None
        self._calls = 0
        self._pages_seen = 0
        self._chosen: set[str] = set()

    def begin(self, index: int) -> None:
        """Prepare to play sample ``index`` of the split."""
        self.goal = self.catalogue.goals[self.goal_indices[index]]
        self._calls = 0
        self._pages_seen = 0
        self._chosen = set()

    def act(self, observation: list[Message]) -> Message:
        """Search, then open the target, choose its options and buy."""
        if self.goal is None:
            raise RuntimeError("Call begin(index) before act().")
        actions = available_actions_of(observation)
        clickables: list[str] = list(actions.get("clickables", []))
        target = self.goal.asin.lower()
        if actions.get("has_search_bar"):
            return self._call("search_action", keywords=self.catalogue.by_asin[self.goal.asin].title)
        if END_BUTTON.lower() in clickables:  # on the item page
            for value in self.goal.target_options.values():
                if value in clickables and value not in self._chosen:
                    self._chosen.add(value)
                    return self._call("click_action", value=value)
            return self._call("click_action", value=END_BUTTON)
        if target in clickables:
            self._chosen = set()
            return self._call("click_action", value=target)
        self._pages_seen += 1
        if NEXT_PAGE.lower() in clickables and self._pages_seen < MAX_RESULT_PAGES:
            return self._call("click_action", value=NEXT_PAGE)
        products = [c for c in clickables if re.fullmatch(r"[a-z0-9]{10}", c)]
        self._chosen = set()
        return self._call("click_action", value=products[0] if products else "back to search")

    def _call(self, name: str, **arguments: str) -> Message:
        self._calls += 1
        call = {
            "id": f"oracle_{self._calls}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
