"""/v1/functions/{id}/pause and /resume (issue 38 item 1): the paused state stored and shown,
skip mode's events stored with their skipped outcome, bad input refused saying what is
allowed, and who paused or resumed recorded in the audit (start mode: the login)."""

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.executor.signing import bearer_hash

from tests.api.helpers import LOCAL, function, store_rows, sync_body
from tests.api.start_mode import PASSWORD, SIGNING_KEY, TOKEN, USER, start_settings

SLUG = "app-pay"


def sync(client: TestClient, **headers: str) -> None:
    resp = client.post("/fn/register", json=sync_body(function("pay")), headers=headers)
    assert resp.status_code == 200, resp.text


def pause(client: TestClient, body: Any, slug: str = SLUG, **kw: Any) -> Any:
    return client.post(f"/v1/functions/{slug}/pause", json=body, **kw)


def test_pause_shows_on_get_and_in_the_list_and_resume_clears_it(client: TestClient) -> None:
    sync(client)
    assert client.get(f"/v1/functions/{SLUG}").json()["data"]["paused"] is False
    done = pause(client, {"mode": "hold", "actor": "alice"})
    assert done.status_code == 200, done.text
    assert done.json()["data"]["pause"]["mode"] == "hold"
    shown = client.get(f"/v1/functions/{SLUG}").json()["data"]
    assert shown["paused"] is True
    assert shown["pause"]["in_progress"] == "pause"
    assert shown["pause"]["paused_by"] == "alice (dev mode (no login))"
    [listed] = client.get("/v1/functions").json()["data"]
    assert (listed["slug"], listed["paused"]) == (SLUG, True)
    resumed = client.post(f"/v1/functions/{SLUG}/resume", json={"actor": "bob"})
    assert resumed.status_code == 200, resumed.text
    shown = client.get(f"/v1/functions/{SLUG}").json()["data"]
    assert shown["paused"] is False
    actions = [(c["action"], c["actor"]) for c in shown["pause_changes"]]
    assert actions == [
        ("resumed", "bob (dev mode (no login))"),
        ("paused", "alice (dev mode (no login))"),
    ]


def test_skip_mode_stores_the_event_with_a_skipped_outcome(client: TestClient) -> None:
    sync(client)
    assert pause(client, {"mode": "skip"}).status_code == 200
    [event_id] = client.post("/e/key", json={"name": "t/e", "data": {}}).json()["ids"]
    assert client.get(f"/v1/events/{event_id}/runs").json()["data"] == []
    [outcome] = client.get(f"/v1/events/{event_id}").json()["data"]["outcomes"]
    assert (outcome["function_id"], outcome["outcome"]) == (SLUG, "function_paused")
    assert outcome["detail"].startswith("skipped: function paused since ")
    assert store_rows(client, "SELECT count(*) FROM runs") == [(0,)]


def test_hold_mode_creates_the_run_and_says_why_it_waits(client: TestClient) -> None:
    sync(client)
    assert pause(client, {"mode": "hold", "actor": "carol"}).status_code == 200
    [event_id] = client.post("/e/key", json={"name": "t/e", "data": {}}).json()["ids"]
    [run] = client.get(f"/v1/events/{event_id}/runs").json()["data"]
    state = client.get(f"/v1/runs/{run['run_id']}").json()["data"]["state"]
    assert state["kind"] == "paused", state
    assert "paused (hold)" in state["words"] and "by carol" in state["words"]
    assert state["since"] is not None


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"mode": "freeze"}, "mode must be one of skip, hold, got 'freeze'"),
        ({"in_progress": "stop"}, "in_progress must be one of pause, cancel, got 'stop'"),
        ({"mode": {}}, "mode must be one of skip, hold, got {}"),
        ({"in_progress": ["pause"]}, "in_progress must be one of pause, cancel, got ['pause']"),
        ({"mode": "hold", "colour": "red"}, "unknown field(s) ['colour']"),
        ([1], "the body must be a JSON object"),
        ({"actor": 5}, "actor must be a short printable name"),
    ],
)
def test_bad_input_is_a_400_saying_what_is_allowed(
    client: TestClient, body: Any, words: str
) -> None:
    sync(client)
    resp = pause(client, body)
    assert resp.status_code == 400, resp.text
    assert words in resp.json()["error"]
    assert client.get(f"/v1/functions/{SLUG}").json()["data"]["paused"] is False


def test_bad_json_unknown_functions_and_resuming_twice(client: TestClient) -> None:
    sync(client)
    bad = client.post(f"/v1/functions/{SLUG}/pause", content=b"{nope")
    assert bad.status_code == 400
    assert "not valid JSON" in bad.json()["error"]
    for resp in (
        pause(client, {"mode": "skip"}, slug="app-nope"),
        client.post("/v1/functions/app-nope/resume", json={}),
        client.get("/v1/functions/app-nope"),
    ):
        assert resp.status_code == 404, resp.text
        assert "no function 'app-nope' is registered" in resp.json()["error"]
    again = client.post(f"/v1/functions/{SLUG}/resume", json={})
    assert again.status_code == 409
    assert again.json()["error"] == f"function {SLUG!r} is not paused"
    assert store_rows(client, "SELECT count(*) FROM function_pause_changes") == [(0,)]


def test_start_mode_needs_a_login_and_records_who_paused(tmp_path: Path) -> None:
    with TestClient(create_app(start_settings(tmp_path)), LOCAL) as secured:
        sync(secured, authorization=f"Bearer {bearer_hash(SIGNING_KEY)}")
        assert pause(secured, {"mode": "hold"}).status_code == 401
        token = {"authorization": f"Bearer {TOKEN}"}
        assert pause(secured, {"mode": "hold"}, headers=token).status_code == 200
        resumed = secured.post(
            f"/v1/functions/{SLUG}/resume", json={"actor": "dana"}, auth=(USER, PASSWORD)
        )
        assert resumed.status_code == 200
        changes = secured.get(f"/v1/functions/{SLUG}", headers=token).json()["data"]
        actors = [(c["action"], c["actor"]) for c in changes["pause_changes"]]
        assert actors == [("resumed", f"dana (user {USER})"), ("paused", "admin token")]
