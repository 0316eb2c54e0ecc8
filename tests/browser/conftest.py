"""A real Weir server (subprocess, loopback port) with a real SDK app, and headless Chromium.

Weir runs as `python -m weir dev` exactly as a user starts it; the SDK app is served by
uvicorn in another process and synced with `-u`.
"""

import json
import os
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from tests.browser.browser_support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    FUNCTIONS,
    HERE,
    Server,
    free_port,
    spawn,
    stop,
    until,
)


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("weir-ui")
    app_port, weir_port = free_port(), free_port()
    weir_url = f"http://127.0.0.1:{weir_port}"
    app = spawn(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "ui_app:app",
            "--app-dir",
            str(HERE),
            "--port",
            str(app_port),
            "--log-level",
            "warning",
        ],
        home / "app.log",
        WEIR_BASE_URL=weir_url,  # where the app posts its config when Weir asks it to sync
    )
    weir = spawn(
        [
            sys.executable,
            "-m",
            "weir",
            "dev",
            "--port",
            str(weir_port),
            "--database-url",
            f"sqlite:///{home}/weir.db",
            "--retry-interval",
            "0.05",
            "-u",
            f"http://127.0.0.1:{app_port}/api/inngest",
        ],
        home / "weir.log",
    )
    try:
        served = Server(weir_url)
        until(lambda: served.get("/health"), "Weir to answer /health")
        until(lambda: _synced(served), "the test app to sync", timeout=30)
        yield served
    finally:
        stop(weir)
        stop(app)


def _synced(server: Server) -> bool:
    query = json.dumps({"query": "{ functions { slug } }"}).encode()
    request = urllib.request.Request(
        server.url + "/v0/gql", query, {"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        return len(json.loads(answer.read())["data"]["functions"]) == FUNCTIONS


# Module scope: Playwright's sync API keeps an event loop running in the main thread while it
# is open, and any later test that starts a loop of its own (asyncio.run) would fail.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        # CI installs it (.ci/system-deps): there a missing browser is a failure, not a skip.
        missing = "Debian's chromium is not installed (apt-get install -y chromium)"
        pytest.fail(missing) if os.environ.get("CI") else pytest.skip(missing)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 860})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    yield tab
    context.close()
