"""`weir start` with both SDKs in cloud mode (signing key set, INNGEST_DEV unset, base URL
pointing at Weir): the app proves the key to sync, Weir signs its requests and checks the
app's signed answers, the SDK reads large run state from /v0/runs with the key; the UI and
REST API need the admin login, and an app with another key cannot sync."""

from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.harness import (
    SDKS,
    START_EVENT_KEY,
    START_OTHER_KEY,
    START_SIGNING_KEY,
    AppServer,
    WeirServer,
)

pytestmark = pytest.mark.integration
KEY = START_SIGNING_KEY
OTHER = START_OTHER_KEY
TOKEN = "integration-admin-token"
ADMIN = {"authorization": f"Bearer {TOKEN}"}


class StartedWeir(WeirServer):
    """`weir start` with one event key (START_EVENT_KEY, which WeirServer.send uses), the
    signing key and an admin token; the read API calls carry the token."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(
            tmp, "--signing-key", KEY, "--event-key", START_EVENT_KEY, "--admin-token", TOKEN
        )
        self.args[self.args.index("dev")] = "start"
        self.event_key = START_EVENT_KEY

    def runs(self, event_id: str) -> list[dict[str, Any]]:
        resp = httpx.get(f"{self.url}/v1/events/{event_id}/runs", headers=ADMIN)
        data: list[dict[str, Any]] = resp.json()["data"]
        return data

    def run(self, run_id: str) -> dict[str, Any]:
        data: dict[str, Any] = httpx.get(f"{self.url}/v1/runs/{run_id}", headers=ADMIN).json()[
            "data"
        ]
        return data


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_cloud_mode_apps_run_against_weir_start(tmp_path: Path, sdk: str) -> None:
    weir = StartedWeir(tmp_path)
    app = AppServer(tmp_path, SDKS[sdk], f"start{sdk}", weir.url, signing_key=KEY)
    try:
        weir.start()
        app.start()
        app.sync()
        steps = weir.finished_run(weir.send("t/steps", {"x": 1}))
        big = weir.finished_run(weir.send("t/bigstate"), timeout=40)
        unauthenticated = httpx.get(f"{weir.url}/v1/runs/{steps['run_id']}")
        page = httpx.get(f"{weir.url}/runs")
        refused_event = httpx.post(f"{weir.url}/e/not-a-key", json={"name": "t/steps"})
    finally:
        app.stop()
        weir.stop()
    assert steps["status"] == "Completed"
    assert steps["output"] == {"a": 2, "b": ["first", "second"]}
    assert big["status"] == "Completed", big["output"]
    assert big["output"][:2] == [2_500_000, 2_500_000]  # read back through /v0/runs
    assert unauthenticated.status_code == 401
    assert page.status_code == 303 and page.headers["location"].startswith("/login")
    assert refused_event.status_code == 401


@pytest.mark.parametrize("sdk", sorted(SDKS))
def test_an_app_with_another_key_cannot_sync(tmp_path: Path, sdk: str) -> None:
    weir = StartedWeir(tmp_path)
    app = AppServer(tmp_path, SDKS[sdk], f"other{sdk}", weir.url, signing_key=OTHER)
    try:
        weir.start()
        app.start()
        reply = httpx.put(app.url, timeout=30)
        functions = httpx.post(
            f"{weir.url}/v0/gql", json={"query": "{ functions { slug } }"}, headers=ADMIN
        ).json()
    finally:
        app.stop()
        weir.stop()
    assert reply.status_code != 200 or not reply.json().get("ok"), reply.text
    assert functions == {"data": {"functions": []}}
