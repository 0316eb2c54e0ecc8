"""Weir in-process (TestClient) in front of the raw loopback apps of evil_app.py: the calls
the misbehaving-app and app-trust tests make."""

import time
from typing import Any

from fastapi.testclient import TestClient
from weir.platform.settings import Settings

from tests.api.evil_app import EvilApp

SIGNING_KEY = "signkey-test-" + "5e" * 32
ADMIN = {"authorization": "Bearer admin"}
SDK = {"authorization": f"Bearer {SIGNING_KEY}"}


def cloud_settings(database_url: str) -> Settings:
    """Weir out of dev mode, signing its calls, admitting the loopback apps, with the event key
    "key" and the admin token "admin"."""
    return Settings(
        database_url=database_url,
        sqlite_synchronous="OFF",
        dev=False,
        event_keys=("key",),
        signing_keys=(SIGNING_KEY,),
        admin_token="admin",
        allowed_app_hosts=("127.0.0.1",),
    )


class Weir:
    """A TestClient and the calls these tests make through it."""

    def __init__(self, client: TestClient, evil: EvilApp) -> None:
        self.client, self.evil = client, evil

    def sync(self, *modes: str, retries: int = 0) -> None:
        functions = [evil_function(self.evil.url(m), m, retries) for m in modes]
        body = {
            "appname": "evil",
            "url": self.evil.url("good"),
            "sdk": "evil:v0",
            "v": "0.1",
            "deploy_type": "ping",
            "functions": functions,
        }
        resp = self.client.post("/fn/register", json=body, headers=SDK)
        assert resp.status_code == 200, resp.text

    def start(self, mode: str) -> str:
        resp = self.client.post("/e/key", json={"name": f"evil/{mode}"})
        assert resp.status_code == 200, resp.text
        ids: list[str] = resp.json()["ids"]
        return ids[0]

    def finished(self, event_id: str, timeout: float = 30.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = self.client.get(f"/v1/events/{event_id}/runs", headers=ADMIN).json()["data"]
            if runs and runs[0]["status"] in ("Completed", "Failed", "Cancelled"):
                run: dict[str, Any] = self.client.get(
                    f"/v1/runs/{runs[0]['run_id']}", headers=ADMIN
                ).json()["data"]
                return run
            time.sleep(0.05)
        raise AssertionError(f"the run of event {event_id} did not end within {timeout}s")

    def run_of(self, mode: str, timeout: float = 30.0) -> dict[str, Any]:
        return self.finished(self.start(mode), timeout)


def evil_function(url: str, mode: str, retries: int) -> dict[str, Any]:
    step = {
        "id": "step",
        "name": "step",
        "runtime": {"type": "http", "url": f"{url}?fnId={mode}"},
        "retries": {"attempts": retries},
    }
    return {
        "id": f"evil-{mode.replace('_', '-')}",
        "name": mode,
        "triggers": [{"event": f"evil/{mode}"}],
        "steps": {"step": step},
    }


def failed_with(run: dict[str, Any], name: str) -> str:
    assert run["status"] == "Failed", run
    assert run["output"]["name"] == name, run["output"]
    message: str = run["output"]["message"]
    return message
