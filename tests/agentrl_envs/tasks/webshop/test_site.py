"""The HTML site: routes in-process through httpx's WSGI transport, and a real headless Chromium session."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator

import httpx
import pytest

from agentrl_envs.tasks.webshop import Catalogue, WebShopEnv
from agentrl_envs.tasks.webshop.site import ShopSite, serve

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


@pytest.mark.parametrize(
    ("path", "status"),
    [("/s/nosuchsession", 404), ("/new?split=test&goal=5000", 400), ("/new?split=nope", 400), ("/nowhere", 404)],
)
def test_bad_requests_get_clear_pages(client: httpx.Client, path: str, status: int) -> None:
    response = client.get(path)
    assert response.status_code == status and 'id="notice"' in response.text


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
                    page.click(f"label:has(input[value='{value}'])")
                    page.wait_for_selector(f"input[value='{value}']:checked")
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
