"""Within an app's call cap, one function holds at most its share: a function whose calls
hang leaves the app's other functions calls of their own. Weir in-process in start mode, in
front of a raw app on loopback (evil_app.py) serving a function that hangs and one that
answers, once on SQLite and once on PostgreSQL."""

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app

from tests.api.evil_app import EvilApp, answer
from tests.api.evil_weir import SIGNING_KEY, Weir, cloud_settings

CALLS_PER_APP = 4  # the default share leaves a quarter of it, one call, to the other functions
RELEASE = threading.Event()


async def hangs(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    for _ in range(600):  # until the test lets go (at most a minute)
        if RELEASE.is_set():
            break
        await asyncio.sleep(0.05)
    await answer(w, 200, {"hung": True}, key=app.key)


@pytest.fixture
def weir(database_url: str) -> Iterator[Weir]:
    RELEASE.clear()
    settings = replace(cloud_settings(database_url), calls_per_app=CALLS_PER_APP)
    evil = EvilApp(SIGNING_KEY, {"hangs": hangs})
    with evil.running() as app, TestClient(create_app(settings), "http://localhost") as client:
        try:
            yield Weir(client, app)
        finally:
            RELEASE.set()


def wait_for(check: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_hanging_function_leaves_its_apps_other_functions_calls(weir: Weir) -> None:
    weir.sync("hangs", "good")
    hung = [weir.start("hangs") for _ in range(2 * CALLS_PER_APP)]
    wait_for(lambda: weir.evil.calls.get("hangs", 0) >= CALLS_PER_APP - 1)
    time.sleep(0.5)  # room for a call past the share, were one to go out
    # the app's other function is still called, one run after another
    for _ in range(3):
        assert weir.run_of("good", timeout=15)["status"] == "Completed"
    assert weir.evil.calls["hangs"] == CALLS_PER_APP - 1  # 3 of the app's 4, all along
    RELEASE.set()  # the hanging calls end: the rest of the hanging function's runs go out
    for event_id in hung:
        assert weir.finished(event_id, timeout=30)["status"] == "Completed"
