"""One shopper's session: upstream WebShop's page flow as a small state machine.

Actions are upstream's strings, ``search[keywords]`` and ``click[value]``. As in upstream's text env the
argument is lower-cased; a search runs from any page; a click must name one of the current page's
clickables (and not ``search``); anything else changes nothing. Navigation follows upstream's ``receive``:
``Back to Search`` starts over, ``Next >``/``< Prev`` page through results, ``< Prev`` on an item returns to
its results page and on a sub-page to the item, sub-page buttons open sub-pages, a product link opens its
item page, an option records the choice, and ``Buy Now`` scores the purchase and ends the session.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentrl_envs.tasks.webshop.catalogue import Catalogue
from agentrl_envs.tasks.webshop.pages import (
    BACK_TO_SEARCH,
    END_BUTTON,
    NEXT_PAGE,
    PREV_PAGE,
    PRODUCT_WINDOW,
    SUB_PAGES,
    Page,
    done_page,
    item_page,
    results_page,
    search_page,
    sub_page,
)
from agentrl_envs.tasks.webshop.reward import RewardInfo, compute_reward
from agentrl_envs.tasks.webshop.types import Goal, Product

__all__ = ["ShopSession", "StepResult", "parse_webshop_action"]

_ACTION = re.compile(r"(.+)\[(.+)\]")


def parse_webshop_action(action: str) -> tuple[str, str | None]:
    """Upstream's ``parse_action``: ``"click[Buy Now]"`` to ``("click", "Buy Now")``; no brackets, no argument."""
    match = _ACTION.match(action)
    if match is None:
        return action, None
    return match.group(1), match.group(2)


@dataclass(frozen=True, slots=True)
class StepResult:
    """What one action did."""

    reward: float = 0.0
    done: bool = False
    valid: bool = True
    problem: str = ""
    """Why an invalid action did nothing (empty when it was valid)."""


@dataclass
class _State:
    keywords: str | None = None
    page: int = 1
    asin: str | None = None
    asins: set[str] = field(default_factory=set)
    options: dict[str, str] = field(default_factory=dict)
    results: list[Product] = field(default_factory=list)


class ShopSession:
    """The shop as one shopper with one goal sees it."""

    def __init__(self, catalogue: Catalogue, goal: Goal, *, show_attrs: bool = False) -> None:
        """Start on the search page.

        Args:
            catalogue: Products, prices and the search index.
            goal: The instruction shown on every page and the purchase is scored against.
            show_attrs: Show upstream's optional Attributes sub-page button.
        """
        self.catalogue = catalogue
        self.goal = goal
        self.show_attrs = show_attrs
        self.done = False
        self.reward: RewardInfo | None = None
        self.purchased: Product | None = None
        self._state = _State()
        self.page: Page = search_page(goal.instruction_text)

    @property
    def observation(self) -> str:
        """The current page as text."""
        return self.page.text()

    @property
    def options(self) -> dict[str, str]:
        """The options chosen so far on the current product."""
        return dict(self._state.options)

    def available_actions(self) -> dict[str, object]:
        """``{"has_search_bar": bool, "clickables": [...]}`` of the current page."""
        return self.page.available_actions()

    def step(self, action: str) -> StepResult:
        """Apply one ``search[...]`` or ``click[...]`` action."""
        if self.done:
            return StepResult(done=True, valid=False, problem=self.ended_message())
        name, arg = parse_webshop_action(action)
        arg = arg.lower() if arg is not None else None
        if name == "search" and arg:
            self._search(arg, 1)
            return StepResult()
        if name == "click" and arg is not None and arg != "search" and arg in self.page.clickables():
            return self._click(arg)
        return StepResult(valid=False, problem=self._why_invalid(name, arg))

    # ----------------------------------------------------------------- navigation

    def _search(self, keywords: str, page: int, *, run: bool = True) -> None:
        state = self._state
        if run or state.keywords != keywords:
            state.results = self.catalogue.search(keywords)
        state.keywords, state.page, state.asin, state.options = keywords, page, None, {}
        window = state.results[(page - 1) * PRODUCT_WINDOW : page * PRODUCT_WINDOW]
        self.page = results_page(self.goal.instruction_text, window, page, len(state.results))

    def _click(self, value: str) -> StepResult:
        node = self.page.clickables()[value]
        state, kind = self._state, self.page.kind
        if value == END_BUTTON.lower():
            return self._buy()
        if value == BACK_TO_SEARCH.lower():
            self._state = _State()
            self.page = search_page(self.goal.instruction_text)
        elif value == NEXT_PAGE.lower() and kind == "results":
            self._search(state.keywords or "", state.page + 1, run=False)
        elif value == PREV_PAGE.lower() and kind == "results":
            self._search(state.keywords or "", state.page - 1, run=False)
        elif value == PREV_PAGE.lower() and kind == "item":
            self._search(state.keywords or "", state.page, run=False)
        elif value in (s.lower() for s in SUB_PAGES):
            which = next(s for s in SUB_PAGES if s.lower() == value)
            self.page = sub_page(self.goal.instruction_text, self._product(), which)
        else:
            if node.role == "product_link":
                state.asin = value.upper()
                state.asins.add(state.asin)
            elif node.role == "option":
                state.options[node.group] = value
            self.page = item_page(
                self.goal.instruction_text, self._product(), state.options, show_attrs=self.show_attrs
            )
        return StepResult()

    def _buy(self) -> StepResult:
        product = self._product()
        price = self.catalogue.prices[product.asin]
        self.reward = compute_reward(product, self.goal, price=price, options=self._state.options)
        self.purchased, self.done = product, True
        self.page = done_page(self.reward.reward)
        return StepResult(reward=self.reward.reward, done=True)

    def _product(self) -> Product:
        assert self._state.asin is not None, "item pages are only reachable after opening a product"
        return self.catalogue.by_asin[self._state.asin]

    # ----------------------------------------------------------------- messages

    def ended_message(self) -> str:
        """What a late action after Buy Now is told."""
        asin = self.purchased.asin if self.purchased else "?"
        score = self.reward.reward if self.reward else 0.0
        return f"This session has ended: {asin} was bought (reward {score}). Start a new session to shop again."

    def _why_invalid(self, name: str, arg: str | None) -> str:
        if name == "search" or name.startswith("search["):
            return "search needs keywords: search[...] with a non-empty query."
        if name == "click" and arg == "search":
            return "Searching is done with search[keywords], not by clicking 'search'."
        if name == "click" and arg is not None:
            shown = ", ".join(repr(c) for c in self.page.clickables())
            return f"{arg!r} is not clickable on this page; clickables: {shown}."
        return f"Unknown action {_clip(name)!r}; use search[keywords] or click[value]."


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
