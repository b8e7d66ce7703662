from __future__ import annotations

from dataclasses import replace

import pytest

from agentrl_envs.tasks.webshop import Goal, Product, compute_reward
from agentrl_envs.tasks.webshop.normalize import normalize_color
from agentrl_envs.tasks.webshop.nouns import title_nouns
from agentrl_envs.tasks.webshop.reward import fuzzy_score

PRODUCT = Product(
    asin="B000000001",
    title="Earth Mama Bright Citrus Deodorant for Sensitive Skin",
    description="A natural deodorant, aluminum free.",
    bullets=("Gentle on skin", "Long lasting freshness"),
    pricing=(10.99,),
    options={"scent": ("bright citrus", "calming lavender"), "size": ("3 ounce (pack of 1)", "3 ounce (pack of 2)")},
    attributes=("sensitive skin", "natural ingredients"),
    category="beauty",
    query="deodorant",
    product_category="Beauty & Personal Care › Personal Care › Deodorants & Antiperspirants",
)
GOAL = Goal(
    asin=PRODUCT.asin,
    instruction_text="i would like a bright citrus deodorant for sensitive skin",
    attributes=("sensitive skin", "aluminum free"),
    goal_options=("bright citrus", "3 ounce (pack of 1)"),
    price_upper=30.0,
    name=PRODUCT.title,
    category="beauty",
    query="deodorant",
    product_category=PRODUCT.product_category,
)
FULL = {"scent": "bright citrus", "size": "3 ounce (pack of 1)"}


@pytest.mark.parametrize(
    ("price", "options", "expected"),
    [
        (10.99, FULL, 1.0),  # attribute via the list, the other via the description; both options; price
        (10.99, {"scent": "bright citrus"}, 4 / 5),
        (10.99, {}, 3 / 5),
        (45.00, FULL, 4 / 5),  # over the cap
        (45.00, {"scent": "calming lavender"}, 2 / 5),
    ],
)
def test_reward_formula(price: float, options: dict[str, str], expected: float) -> None:
    assert compute_reward(PRODUCT, GOAL, price=price, options=options).reward == pytest.approx(expected)


def test_type_factor_halves_or_zeroes_other_products() -> None:
    unrelated = replace(PRODUCT, title="Oakhurst Walnut Coffee Table", query="coffee table", product_category="Home")
    info = compute_reward(unrelated, GOAL, price=10.99, options=FULL)
    assert info.r_type == 0.0 and info.reward == 0.0
    same_query = replace(PRODUCT, title="Citrus Stick by Someone")
    info = compute_reward(same_query, GOAL, price=10.99, options=FULL)
    assert info.query_match and 0 < info.title_score <= 0.2 and info.r_type == 1.0


@pytest.mark.parametrize(
    ("a", "b", "expected_match"),
    [
        ("natural ingredients", "Natural Ingredients!", True),
        ("sensitive skin", "skin, sensitive", True),
        ("long lasting", "long sleeve", False),
        ("3 ounce (pack of 1)", "3 ounce (pack of 2)", True),  # token-set ratio forgives a subset: as upstream
    ],
)
def test_fuzzy_matching_follows_thefuzz_defaults(a: str, b: str, expected_match: bool) -> None:
    assert (fuzzy_score(a, b) > 85) is expected_match


def test_fuzzy_matching_drops_non_ascii_as_thefuzz_does() -> None:
    assert fuzzy_score("Crème Brûlée", "crme brle") == 100
    assert fuzzy_score("靴", "shoes") == 0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("dark navy blue", "blue"), ("navy", "navy"), ("light grey", "grey"), ("3 ounce", "3 ounce")],
)
def test_normalize_color_takes_the_first_listed_base_color(value: str, expected: str) -> None:
    assert normalize_color(value) == expected


def test_title_nouns_drop_function_words_adjectives_and_numbers() -> None:
    assert title_nouns("The Best Comfortable Hiking Boots for Men, 2 Pack") == ("hiking", "boots", "men", "pack")
