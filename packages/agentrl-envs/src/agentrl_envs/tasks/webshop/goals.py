"""Goals: price caps, upstream's human-goal list, its fixed shuffle and the split ranges.

Upstream builds one goal per human-written instruction (``items_human_ins.json``), skips instructions without
attributes, appends a price cap drawn from the next multiples of ten above the product's price, and
shuffles the list with ``random.seed(233)``. AgentBench then plays goal indices ``[0, 200)`` as its test set
and ``[1000, 12000)`` for training.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from agentrl_envs.tasks.webshop.types import Goal, Product

__all__ = ["PRICE_STEPS", "SPLIT_RANGES", "human_goals", "price_cap", "shuffle_goals"]

PRICE_STEPS: tuple[float, ...] = tuple(10.0 * i for i in range(1, 100))
NO_CAP = 1_000_000.0
GOAL_SHUFFLE_SEED = 233

SPLIT_RANGES: dict[str, tuple[int, int]] = {"test": (0, 200), "dev": (200, 280), "train": (1000, 12000)}
"""Goal index ranges per split: ``webshop-std`` and ``webshop-env_train`` from the config; ``dev`` is
AgentBench's earlier ``webshop-dev`` range."""


def price_cap(rng: random.Random, price: float) -> tuple[float, str]:
    """Upstream's cap: the larger of two draws from the four price steps above ``price``.

    Returns:
        The cap and the text appended to the instruction (empty, with no cap, above $980).
    """
    steps = [p for p in PRICE_STEPS if p > price][:4]
    if len(steps) < 2:
        return NO_CAP, ""
    _, upper = sorted(rng.sample(steps, 2))
    return upper, f", and price lower than {upper:.2f} dollars"


def shuffle_goals(goals: list[Goal]) -> list[Goal]:
    """Upstream's fixed goal order (``random.seed(233); random.shuffle(goals)``)."""
    shuffled = list(goals)
    random.Random(GOAL_SHUFFLE_SEED).shuffle(shuffled)
    return shuffled


def human_goals(
    products: Iterable[Product],
    prices: Mapping[str, float],
    instructions: Mapping[str, list[dict[str, Any]]],
    *,
    rng: random.Random,
) -> list[Goal]:
    """Upstream's ``get_human_goals`` over ``items_human_ins.json`` (asin to its instructions), shuffled."""
    goals = []
    for product in products:
        for entry in instructions.get(product.asin, ()):
            attributes = entry.get("instruction_attributes") or []
            if not attributes:
                continue
            cap, cap_text = price_cap(rng, prices[product.asin])
            goal_options = entry.get("instruction_options") or []
            if isinstance(goal_options, dict):
                goal_options = list(goal_options.values())
            goals.append(
                Goal(
                    asin=product.asin,
                    instruction_text=str(entry["instruction"]).strip(".") + cap_text,
                    attributes=tuple(attributes),
                    goal_options=tuple(str(o) for o in goal_options),
                    price_upper=cap,
                    name=product.title,
                    category=product.category,
                    query=product.query,
                    product_category=product.product_category,
                    target_options=_target_options(product, goal_options),
                )
            )
    return shuffle_goals(goals)


def _target_options(product: Product, goal_options: Iterable[Any]) -> dict[str, str]:
    """Which option of ``product`` each goal option names (exact value match), for the oracle."""
    target = {}
    for wanted in goal_options:
        value = str(wanted).strip().replace("/", " | ").lower()
        for name, values in product.options.items():
            if value in values and name not in target:
                target[name] = value
                break
    return target
