"""POST /v1/runs/{id}/rerun: a new run of the same function from the same event, linked to the
original; a clear 404 for an unknown run and a 409 for a run that can no longer be rerun.
(Refusing a caller without credentials is checked for every route in test_auth.py.)"""

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app

from tests.api.evil_app import EvilApp
from tests.api.evil_weir import ADMIN, SDK, SIGNING_KEY, Weir, cloud_settings
from tests.api.helpers import LOCAL


@pytest.fixture
def weir(database_url: str) -> Iterator[Weir]:
    settings = cloud_settings(database_url)
    with (
        EvilApp(SIGNING_KEY).running() as evil,
        TestClient(create_app(settings), LOCAL) as client,
    ):
        yield Weir(client, evil)


def run(weir: Weir, run_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """The run once it has ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data: dict[str, Any] = weir.client.get(f"/v1/runs/{run_id}", headers=ADMIN).json()["data"]
        if data["status"] in ("Completed", "Failed", "Cancelled"):
            return data
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not end within {timeout}s")


def test_a_rerun_starts_a_new_run_from_the_same_event_linked_to_the_original(
    weir: Weir,
) -> None:
    weir.sync("good")
    first = weir.run_of("good")
    assert first["status"] == "Completed", first

    resp = weir.client.post(f"/v1/runs/{first['run_id']}/rerun", headers=ADMIN)

    assert resp.status_code == 200, resp.text
    answer = resp.json()["data"]
    assert answer["original_run_id"] == first["run_id"]
    assert answer["run_id"] != first["run_id"]
    again = run(weir, answer["run_id"])
    assert again["status"] == "Completed", again
    assert again["original_run_id"] == first["run_id"]
    assert again["event_ids"] == first["event_ids"]
    assert again["output"] == first["output"]
    assert weir.evil.calls["good"] == 4  # two calls (discover, then the end) per run


def test_rerunning_an_unknown_run_is_a_404_naming_it(weir: Weir) -> None:
    resp = weir.client.post("/v1/runs/01NOSUCHRUN/rerun", headers=ADMIN)

    assert resp.status_code == 404
    assert resp.json() == {"error": "no run with id '01NOSUCHRUN'"}


def test_rerunning_a_run_whose_function_is_gone_is_a_409_saying_why(weir: Weir) -> None:
    weir.sync("good")
    first = weir.run_of("good")
    weir.sync("not_json")  # the app's new sync no longer has the function: it is archived

    resp = weir.client.post(f"/v1/runs/{first['run_id']}/rerun", headers=ADMIN)

    assert resp.status_code == 409
    error = resp.json()["error"]
    assert first["run_id"] in error
    assert "no longer part of any synced app" in error
    assert (
        len(weir.client.get(f"/v1/events/{first['event_id']}/runs", headers=ADMIN).json()["data"])
        == 1
    )


def test_a_rerun_is_a_post_for_the_admin_only(weir: Weir) -> None:
    assert weir.client.get("/v1/runs/x/rerun", headers=ADMIN).status_code == 405
    refused = weir.client.post("/v1/runs/x/rerun", headers=SDK)  # the signing key is not admin
    assert refused.status_code == 401
