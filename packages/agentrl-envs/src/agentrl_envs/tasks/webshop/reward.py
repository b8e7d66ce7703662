"""The purchase reward: upstream WebShop's formula.

``reward = r_type * (attribute matches + option matches + price ok) / (#attributes + #options + 1)``

* attributes: a goal attribute matches when a product attribute fuzzy-matches it (token-set ratio > 85) or
  it appears verbatim in the title, features or description;
* options: a goal option matches when a chosen option fuzzy-matches it after colour normalisation;
* price: the bought price is at most the goal's cap;
* ``r_type`` (1, 0.5, 0.1 or 0) checks the product type: same search query, two shared category levels,
  or enough shared title nouns (see :mod:`.nouns` for how nouns are found without spaCy).

Fuzzy scores use rapidfuzz with thefuzz's defaults (non-ASCII dropped, lower-case, non-alphanumerics to spaces,
integer score).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rapidfuzz import fuzz
from rapidfuzz.utils import default_process

from agentrl_envs.tasks.webshop.normalize import normalize_color
from agentrl_envs.tasks.webshop.nouns import title_nouns
from agentrl_envs.tasks.webshop.types import Goal, Product

__all__ = ["RewardInfo", "compute_reward", "fuzzy_score", "type_reward"]

FUZZY_THRESHOLD = 85


@dataclass(frozen=True, slots=True)
class RewardInfo:
    """The reward and its parts (upstream's ``verbose`` info)."""

    reward: float
    r_type: float
    r_att: float
    r_option: float | None
    r_price: bool
    query_match: bool
    category_match: bool
    title_score: float


def _thefuzz_process(text: str) -> str:
    """Drop non-ASCII, then apply rapidfuzz's default processing (thefuzz's ``full_process(force_ascii=True)``)."""
    return default_process(text.encode("ascii", errors="ignore").decode())


def fuzzy_score(a: str, b: str) -> int:
    """The ``token_set_ratio`` of thefuzz (full processing, rounded to an int), computed with rapidfuzz."""
    return round(fuzz.token_set_ratio(a, b, processor=_thefuzz_process))


def type_reward(product: Product, goal: Goal) -> tuple[float, bool, bool, float]:
    """``(r_type, query_match, category_match, title_score)`` of buying ``product`` for ``goal``."""
    query_match = product.query == goal.query
    bought_levels = {level.strip() for level in product.product_category.split("›")}
    goal_levels = {level.strip() for level in goal.product_category.split("›")}
    category_match = len(bought_levels & goal_levels) >= 2
    desired = title_nouns(goal.name)
    bought = title_nouns(product.title)
    title_score = len(set(bought) & set(desired)) / len(desired) if desired else 0.2
    r_type = 1.0
    if not (query_match or category_match or title_score > 0.2):
        r_type = 0.5
    if title_score < 0.1:
        r_type = 0.1
    if title_score == 0.0:
        r_type = 0.0
    return r_type, query_match, category_match, title_score


def _attribute_matches(product: Product, goal_attributes: Iterable[str]) -> int:
    texts = (product.title.lower(), " ".join(product.bullets).lower(), product.description.lower())
    matches = 0
    for wanted in goal_attributes:
        if any(fuzzy_score(have, wanted) > FUZZY_THRESHOLD for have in product.attributes):
            matches += 1
        elif any(wanted in text for text in texts):
            matches += 1
    return matches


def _option_matches(chosen: Iterable[str], wanted: Iterable[str]) -> int:
    chosen_norm = [normalize_color(o) for o in chosen]
    matches = 0
    for goal_option in (normalize_color(o) for o in wanted):
        if any(fuzzy_score(have, goal_option) > FUZZY_THRESHOLD for have in chosen_norm):
            matches += 1
    return matches


def compute_reward(product: Product, goal: Goal, *, price: float, options: Mapping[str, str]) -> RewardInfo:
    """Score buying ``product`` at ``price`` with the chosen ``options`` (option name to value) for ``goal``."""
    r_type, query_match, category_match, title_score = type_reward(product, goal)
    r_price = price <= goal.price_upper
    attr_matches = _attribute_matches(product, goal.attributes)
    option_matches = _option_matches(options.values(), goal.goal_options)
    total = (attr_matches + option_matches + int(r_price)) / (len(goal.attributes) + len(goal.goal_options) + 1)
    return RewardInfo(
        reward=total * r_type,
        r_type=r_type,
        r_att=attr_matches / len(goal.attributes) if goal.attributes else 0.0,
        r_option=option_matches / len(goal.goal_options) if goal.goal_options else None,
        r_price=r_price,
        query_match=query_match,
        category_match=category_match,
        title_score=title_score,
    )
