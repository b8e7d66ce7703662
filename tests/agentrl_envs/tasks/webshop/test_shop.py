from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentrl_envs.tasks.webshop import Catalogue, ShopSession
from agentrl_envs.tasks.webshop.shop import parse_webshop_action


@pytest.fixture
def shop(catalogue: Catalogue) -> ShopSession:
    return ShopSession(catalogue, catalogue.goals[0])


def open_target(shop: ShopSession) -> str:
    target = shop.catalogue.by_asin[shop.goal.asin]
    shop.step(f"search[{target.title}]")
    asin = target.asin.lower()
    for _ in range(5):
        if asin in shop.available_actions()["clickables"]:
            break
        shop.step("click[next >]")
    assert shop.step(f"click[{asin}]").valid
    return asin


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        ("search[red shoes]", ("search", "red shoes")),
        ("click[< Prev]", ("click", "< Prev")),
        ("search[]", ("search[]", None)),
        ("buy", ("buy", None)),
    ],
)
def test_parse_action_as_upstream(action: str, expected: tuple[str, str | None]) -> None:
    assert parse_webshop_action(action) == expected


def test_start_page_is_the_search_page(shop: ShopSession) -> None:
    assert shop.observation == f"WebShop [SEP] Instruction: [SEP] {shop.goal.instruction_text} [SEP] Search"
    assert shop.available_actions() == {"has_search_bar": True, "clickables": ["search"]}


def test_results_paginate_ten_at_a_time(shop: ShopSession) -> None:
    shop.step("search[shoes]")
    assert "Page 1 (Total results: 50)" in shop.observation
    first = shop.available_actions()["clickables"]
    assert first[:2] == ["back to search", "next >"] and len(first) == 12
    shop.step("click[next >]")
    second = shop.available_actions()["clickables"]
    assert "Page 2 (Total results: 50)" in shop.observation and second[:3] == ["back to search", "< prev", "next >"]
    assert not set(first[2:]) & set(second[3:])
    shop.step("click[< prev]")
    assert shop.available_actions()["clickables"] == first


def test_item_page_options_sub_pages_and_back(shop: ShopSession) -> None:
    asin = open_target(shop)
    product = shop.catalogue.by_asin[asin.upper()]
    clickables = shop.available_actions()["clickables"]
    assert clickables[:6] == ["back to search", "< prev", "description", "features", "reviews", "buy now"]
    assert clickables[6:] == [v for values in product.options.values() for v in values]
    assert f"Price: {product.price_tag} [SEP] Rating: {product.rating}" in shop.observation
    name, values = next(iter(product.options.items()))
    shop.step(f"click[{values[-1]}]")
    assert shop.options == {name: values[-1]}
    shop.step("click[description]")
    assert shop.page.kind == "item_sub" and product.description in shop.observation
    shop.step("click[< prev]")
    assert shop.page.kind == "item" and shop.options == {name: values[-1]}
    shop.step("click[features]")
    assert product.bullets[0] in shop.observation
    shop.step("click[< prev]")
    shop.step("click[reviews]")
    assert ("No reviews found" in shop.observation) is (not product.reviews)
    shop.step("click[< prev]")
    shop.step("click[< prev]")
    assert shop.page.kind == "results" and shop.options == {}
    shop.step("click[back to search]")
    assert shop.page.kind == "search"


def test_buying_the_target_with_goal_options_scores_one(shop: ShopSession) -> None:
    open_target(shop)
    for value in shop.goal.target_options.values():
        shop.step(f"click[{value}]")
    result = shop.step("click[Buy Now]")
    assert result.done and result.reward == 1.0
    assert shop.observation == "Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] 1.0"


@pytest.mark.parametrize(
    ("action", "problem"),
    [
        ("click[buy now]", "'buy now' is not clickable on this page; clickables: 'search'."),
        ("click[search]", "Searching is done with search[keywords], not by clicking 'search'."),
        ("search[]", "search needs keywords"),
        ("jump[home]", "Unknown action 'jump'"),
        ("x" * 5000, "Unknown action 'xxxx"),
    ],
)
def test_invalid_actions_change_nothing_and_say_why(shop: ShopSession, action: str, problem: str) -> None:
    before = shop.observation
    result = shop.step(action)
    assert not result.valid and result.reward == 0.0 and not result.done
    assert problem in result.problem and len(result.problem) < 400
    assert shop.observation == before


def test_actions_after_buy_now_are_refused_with_a_message(shop: ShopSession) -> None:
    open_target(shop)
    shop.step("click[buy now]")
    page = shop.page
    result = shop.step("search[anything]")
    assert result.done and not result.valid and "This session has ended" in result.problem
    assert shop.page is page


def test_search_is_allowed_from_any_page_as_upstream(shop: ShopSession) -> None:
    open_target(shop)
    assert shop.step("search[coffee table]").valid and shop.page.kind == "results"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    actions=st.lists(st.one_of(st.text(max_size=60), st.builds("click[{}]".format, st.text(max_size=20))), max_size=8)
)
def test_arbitrary_actions_never_raise(catalogue: Catalogue, actions: list[str]) -> None:
    shop = ShopSession(catalogue, catalogue.goals[3])
    for action in [*actions, "search[shoes]", "click[next >]", *actions]:
        result = shop.step(action)
        assert result.valid or result.problem
        assert shop.observation and isinstance(shop.available_actions()["clickables"], list)
