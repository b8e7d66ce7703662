"""The HTML site: routes in-process through httpx's WSGI transport, and a real headless Chromium session."""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import httpx
import pytest

from agentrl_envs.tasks.webshop import Catalogue, ShopSession, WebShopEnv, load_catalogue
from agentrl_envs.tasks.webshop.site import ShopSite, render_page, serve

from .conftest import click, search

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def client(catalogue: Catalogue) -> Iterator[httpx.Client]:
    site = ShopSite(catalogue)
    with httpx.Client(transport=httpx.WSGITransport(app=site), base_url="http://shop") as client:
        client.site = site  # type: ignore[attr-defined]
        yield client


def start(client: httpx.Client, goal: int = 0) -> str:
    response = client.get(f"/new?split=test&goal={goal}")
    assert response.status_code == 303
    return response.headers["location"]


def test_home_and_session_pages(client: httpx.Client) -> None:
    assert "Start shopping" in client.get("/").text
    page = start(client)
    html = client.get(page).text
    assert 'id="search_input"' in html and 'data-page="search"' in html
    assert client.post(f"{page}/search", data={"keywords": "shoes"}).status_code == 303
    state = client.get(f"{page}/state.json").json()
    assert state["page"] == "results" and state["observation"].startswith("Instruction: [SEP] ")
    assert 'class="product-link"' in client.get(page).text


class VisibleText(HTMLParser):
    """What a browser shows inside <main> (text runs, in order) and what its forms can post as ``value``."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.values: list[str] = []
        self._in_main = False
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self._in_main |= tag == "main"
        self._hidden += tag in ("noscript", "style", "script")
        if tag in ("button", "input") and found.get("name") == "value":
            self.values.append(found["value"] or "")

    def handle_endtag(self, tag: str) -> None:
        self._hidden -= tag in ("noscript", "style", "script")
        self._in_main &= tag != "main"

    def handle_data(self, data: str) -> None:
        if self._in_main and not self._hidden and data.strip():
            self.texts.append(data.strip())


def parse(html: str) -> VisibleText:
    parser = VisibleText()
    parser.feed(html)
    return parser


def test_html_shows_exactly_the_text_observation_and_its_clickables(catalogue: Catalogue) -> None:
    goal = catalogue.goals[2]
    target = catalogue.by_asin[goal.asin]
    shop = ShopSession(catalogue, goal, show_attrs=True)
    actions = [
        "search[" + target.title + "]",
        "click[next >]",
        "click[< prev]",
        f"click[{target.asin.lower()}]",
        *[f"click[{value}]" for value in goal.target_options.values()],
        "click[reviews]",
        "click[< prev]",
        "click[attributes]",
        "click[< prev]",
        "click[buy now]",
    ]
    kinds = set()
    for action in ["", *actions]:
        if action:
            assert shop.step(action).valid, action
        seen = parse(render_page(shop.page, "/s/x"))
        kinds.add(shop.page.kind)
        assert " [SEP] ".join(seen.texts) == shop.observation
        clickables = shop.available_actions()["clickables"]
        # the search page's "search" is the search form's submit button; every other clickable posts its value
        assert sorted(seen.values) == sorted(c for c in clickables if c != "search")
    assert kinds == {"search", "results", "item", "item_sub", "done"}


@pytest.mark.parametrize(
    ("path", "status"),
    [("/s/nosuchsession", 404), ("/new?split=test&goal=5000", 400), ("/new?split=nope", 400), ("/nowhere", 404)],
)
def test_bad_requests_get_clear_pages(client: httpx.Client, path: str, status: int) -> None:
    response = client.get(path)
    assert response.status_code == status and 'id="notice"' in response.text


def test_a_small_catalogue_offers_only_the_splits_it_has(data_root: Path) -> None:
    site = ShopSite(load_catalogue(data_root, num_products=60))  # 120 goals: part of test, no train
    with httpx.Client(transport=httpx.WSGITransport(app=site), base_url="http://shop") as client:
        assert "test (120 goals)" in client.get("/").text and "train" not in client.get("/").text
        response = client.get("/new?split=train&goal=0")
        assert response.status_code == 400 and "split &#x27;train&#x27; needs goal indices 1000..11999" in response.text
        assert client.get("/new?split=test&goal=119").status_code == 303


def test_invalid_click_and_late_actions_show_a_notice(client: httpx.Client, catalogue: Catalogue) -> None:
    page = start(client, goal=1)
    client.post(f"{page}/click", data={"value": "buy now"})
    assert "&#x27;buy now&#x27; is not clickable on this page" in client.get(page).text
    assert "is not clickable" not in client.get(page).text  # a notice is shown once
    client.post(f"{page}/search", data={"keywords": ""})
    assert "search needs keywords" in client.get(page).text
    shop = client.site.session(page.rsplit("/", 1)[1])  # type: ignore[attr-defined]
    target = catalogue.by_asin[shop.goal.asin]
    client.post(f"{page}/search", data={"keywords": target.title})
    client.post(f"{page}/click", data={"value": target.asin.lower()})
    client.post(f"{page}/click", data={"value": "buy now"})
    assert client.get(f"{page}/state.json").json()["done"] is True
    client.post(f"{page}/search", data={"keywords": "more"})
    assert "This session has ended" in client.get(page).text


def test_huge_non_ascii_and_oversized_posts(client: httpx.Client) -> None:
    page = start(client, goal=2)
    assert client.post(f"{page}/search", data={"keywords": "table " * 17_000}).status_code == 303
    assert client.get(f"{page}/state.json").json()["page"] == "results"
    client.post(f"{page}/search", data={"keywords": "chaussures très légères 靴 👟"})
    state = client.get(f"{page}/state.json").json()
    assert "Page 1 (Total results: 0)" in state["observation"]
    client.post(f"{page}/click", data={"value": "靴"})
    assert "&#x27;靴&#x27; is not clickable on this page" in client.get(page).text
    response = client.post(f"{page}/search", content=b"keywords=" + b"x" * (2 << 20))
    assert response.status_code == 413 and "the shop takes up to" in response.text
    assert client.delete(page).status_code == 405


def test_serve_command_serves_the_site(data_root: Path) -> None:
    command = [sys.executable, "-m", "agentrl_envs.cli", "webshop", "serve", "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("WebShop at http://127.0.0.1:"), line
        url = line.split()[2]
        assert "Start shopping" in httpx.get(url, timeout=10).text
        assert httpx.get(f"{url}new?split=test&goal=0", timeout=10).status_code == 303
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def site_url(catalogue: Catalogue) -> Iterator[str]:
    server = serve(ShopSite(catalogue), port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    yield f"http://{host}:{port}"
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.mark.slow
def test_chromium_shops_and_sees_the_env_reward(site_url: str, catalogue: Catalogue) -> None:
    from playwright.sync_api import sync_playwright

    assert shutil.which("chromium") == CHROMIUM, "Debian's chromium is missing: run scripts/bootstrap.sh"
    goal_index = 9
    env = WebShopEnv(split="test")
    env.reset(options={"index": goal_index})
    goal = env.session.goal
    target = catalogue.by_asin[goal.asin]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            for with_options in (False, True):
                page.goto(f"{site_url}/new?split=test&goal={goal_index}")
                assert goal.instruction_text in page.inner_text("#instruction-text")
                page.fill("#search_input", goal.query)
                page.click("button:text-is('Search')")
                assert "Page 1 (Total results: 50)" in page.inner_text("body")
                first_page = page.locator(".product-link").all_inner_texts()
                page.click("button:text-is('Next >')")
                assert "Page 2 (Total results: 50)" in page.inner_text("body")
                assert not set(first_page) & set(page.locator(".product-link").all_inner_texts())
                page.click("button:text-is('< Prev')")
                assert page.locator(".product-link").all_inner_texts() == first_page
                page.click("button:text-is('Back to Search')")
                page.fill("#search_input", target.title)
                page.click("button:text-is('Search')")
                page.click(f".product-link:text-is('{target.asin}')")
                assert page.locator("h4", has_text=target.title).count() == 1
                page.click("button:text-is('Description')")
                assert target.description in page.inner_text("body")
                page.click("button:text-is('< Prev')")
                chosen = list(goal.target_options.values()) if with_options else []
                for value in chosen:
                    with page.expect_navigation():  # choosing an option posts it and reloads the item page
                        page.click(f"label:has(input[value='{value}'])")
                    assert page.is_checked(f"input[value='{value}']")
                page.click("button:text-is('Buy Now')")
                browser_reward = float(page.inner_text("#reward"))

                env.reset(options={"index": goal_index})
                for action in [search(target.title), click(target.asin.lower()), *[click(v) for v in chosen]]:
                    env.step(action)
                _, env_reward, terminated, _, _ = env.step(click("Buy Now"))
                assert terminated and browser_reward == pytest.approx(env_reward)
                assert (env_reward == 1.0) is with_options
        finally:
            browser.close()
