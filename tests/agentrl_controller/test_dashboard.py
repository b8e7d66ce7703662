"""The live dashboard at ``/`` in a real headless Chromium (Debian's, driven by Playwright) against a real
controller: it shows the workers, the open sessions and a moving interact rate, and uses a ``#token=`` fragment."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from tests.agentrl_controller.conftest import Server, call, noop_task, start_server, stop_server

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
