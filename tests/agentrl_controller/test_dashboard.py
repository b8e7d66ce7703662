"""The live dashboard at ``/`` in a real headless Chromium (Debian's, driven by Playwright) against a real
controller: it shows the configured tasks, finished episodes with their success rate, sessions over time, the
workers, the open sessions and a moving interact rate, rendered server-side at load; it uses a ``#token=``
fragment."""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.agentrl_controller.conftest import TOY, Server, call, noop_task, start_server, stop_server, toy_task

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
TOKEN = "dashboard-token-0123456789"


@contextmanager
def page_on(url: str) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    assert shutil.which("chromium") == CHROMIUM, "Debian's chromium is missing: run scripts/bootstrap.sh"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(url)
            yield page
        finally:
            browser.close()


@contextmanager
def traffic(server: Server, headers: dict[str, str], sessions: int) -> Iterator[None]:
    """``sessions`` open no-op sessions, interacted with in a loop until the block ends."""
    stop = threading.Event()
    with httpx.Client(base_url=server.url + "/", headers=headers) as client:
        sids = [
            client.post("start_sample", json={"name": "noop", "index": i}).headers["session_id"]
            for i in range(sessions)
        ]

        def loop() -> None:
            while not stop.is_set():
                for sid in sids:
                    client.post("interact", headers={"session_id": sid}, json={"messages": [call("noop", "{}")]})

        thread = threading.Thread(target=loop)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            for sid in sids:
                client.post("cancel", headers={"session_id": sid})


def test_dashboard_shows_workers_sessions_and_throughput(server) -> None:
    root = server.url.removesuffix("/api")
    with traffic(server, {}, sessions=3), page_on(root + "/") as page:
        page.wait_for_function("document.getElementById('sessions').textContent === '3'", timeout=20_000)
        page.wait_for_function("parseFloat(document.getElementById('throughput').textContent) > 0", timeout=20_000)
        workers = page.locator("#workers tbody tr").all_inner_texts()
        assert any("toy-std" in row and "local" in row for row in workers)
        assert any("noop" in row and "3 / 64" in row.replace("\t", " ") for row in workers), workers
        assert page.locator("#tasks tbody tr").all_inner_texts() == ["noop\t3"]


def test_dashboard_uses_the_token_from_the_fragment(tmp_path) -> None:
    server = start_server(tmp_path, [noop_task(lazy=False)], token=TOKEN)
    root = server.url.removesuffix("/api")
    try:
        assert httpx.get(server.url + "/list_sessions").status_code == 401
        with traffic(server, {"Authorization": f"Bearer {TOKEN}"}, sessions=2):
            with page_on(root + "/") as page:  # no token: the page loads but the API refuses it
                page.wait_for_function("document.getElementById('updated').textContent.startsWith('error')")
            with page_on(f"{root}/#token={TOKEN}") as page:
                page.wait_for_function("document.getElementById('sessions').textContent === '2'", timeout=20_000)
    finally:
        stop_server(server)


def play_toy_episodes(client: httpx.Client, wins: int, losses: int) -> None:
    """Finish ``wins + losses`` toy episodes: the first ``wins`` answer the sample's number, the rest a wrong one."""
    for index in range(wins + losses):
        sid = client.post("start_sample", json={"name": "toy", "index": index}).headers["session_id"]
        value = index if index < wins else index + 1
        answer = call("answer", json.dumps({"value": value}))
        out = client.post("interact", headers={"session_id": sid}, json={"messages": [answer]}).json()
        assert out["finish"] and out["status"] == "completed"


def test_the_page_renders_its_figures_server_side_at_load(tmp_path) -> None:
    """With JavaScript off, the page as the server sends it already holds every figure (a screenshot at load)."""
    from playwright.sync_api import sync_playwright

    tasks = [toy_task(lazy=False), noop_task(lazy=False)]
    server = start_server(tmp_path, tasks, sessions={"sweep_interval_s": 0.2})
    root = server.url.removesuffix("/api")
    try:
        with httpx.Client(base_url=server.url + "/") as client:
            play_toy_episodes(client, wins=3, losses=1)
            for index in range(2):  # left open
                client.post("start_sample", json={"name": "noop", "index": index})
            time.sleep(0.5)  # a few points of history
            raw = httpx.get(root + "/").text
            assert '<b id="sessions">2</b>' in raw and "never" not in raw
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                try:
                    page = browser.new_context(java_script_enabled=False).new_page()
                    page.goto(root + "/")
                    shot = page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
                    episodes = page.locator("#episodes tbody tr").all_inner_texts()
                    configured = page.locator("#configured tbody tr").all_inner_texts()
                    updated = page.locator("#updated").inner_text()
                    history = page.locator("#history").text_content()
                finally:
                    browser.close()
    finally:
        stop_server(server)
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    assert episodes == ["toy-std\t4\t75.0% (3)\tcompleted: 4"]
    assert configured[0].split("\t")[:4] == ["toy-std", TOY, "-", "toy"]
    assert configured[1].split("\t")[0] == "noop" and configured[1].endswith("at start-up")
    assert re.fullmatch(r"\d\d:\d\d:\d\d", updated)
    assert "now: 2 open (peak 2)" in history
