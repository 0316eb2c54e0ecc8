"""Calls between Weir and apps cannot be redirected: a 30x from an app is an error naming
where it pointed, never followed (it could lead off --allowed-app-hosts carrying a signed
request). Weir runs in-process (TestClient); the app is the raw loopback server of
evil_app.py."""

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.platform.app import create_app
from weir.platform.settings import Settings

from tests.api.evil_app import EvilApp, Handler, answer, head
from tests.api.test_app_misbehaviour import SIGNING_KEY, Weir, failed_with


async def redirect(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    # "localhost" is the same server under a name --allowed-app-hosts does not list
    w.write(head(307, 0, {"location": f"http://localhost:{app.port}/trap"}))
    await w.drain()


async def trap(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    await answer(w, 200, {"trapped": True}, key=app.key)


MODES: dict[str, Handler] = {"redirect": redirect, "trap": trap}


def settings(tmp_path: Path, **changes: Any) -> Settings:
    base: dict[str, Any] = {
        "database_url": f"sqlite:///{tmp_path}/weir.db",
        "sqlite_synchronous": "OFF",
        "event_keys": ("key",),
        "signing_keys": (SIGNING_KEY,),
        "admin_token": "admin",
        "retry_delay_ms": 20,
        "allowed_app_hosts": ("127.0.0.1",),
    }
    return Settings(**(base | changes))


@pytest.fixture
def weir(tmp_path: Path) -> Iterator[Weir]:
    with (
        EvilApp(SIGNING_KEY, MODES).running() as evil,
        TestClient(create_app(settings(tmp_path))) as client,
    ):
        yield Weir(client, evil)


def test_a_redirecting_app_fails_the_call_naming_the_location(weir: Weir) -> None:
    weir.sync("redirect", retries=1)
    message = failed_with(weir.run_of("redirect"), "Redirected")
    assert f"http://localhost:{weir.evil.port}/trap" in message and "307" in message
    assert weir.evil.calls["redirect"] == 2  # retried like any failed call
    assert "trap" not in weir.evil.calls  # never followed


def test_a_sync_answered_with_a_redirect_is_refused_naming_the_location(weir: Weir) -> None:
    platform = weir.client.app.state.platform  # type: ignore[attr-defined]
    assert weir.client.portal is not None
    error = weir.client.portal.call(platform.sync_url, weir.evil.url("redirect"))
    assert f"http://localhost:{weir.evil.port}/trap" in error and "307" in error
    assert "trap" not in weir.evil.calls
