"""/v1/capacity: live capacities created at sync from the declared values, never overwritten
by a later sync (drift instead), changed only with the revision read (409 otherwise), bad input
refused saying what is allowed, the actor recorded, and the drift on /metrics."""

from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.executor.signing import bearer_hash

from tests.api.helpers import LOCAL, function, store_rows, sync_body
from tests.api.start_mode import PASSWORD, SIGNING_KEY, TOKEN, USER, start_settings
from tests.support.capacity_api import capacities, change

STRIPE = "scope stripe"


def sync(client: TestClient, limit: int, app_limit: int = 4, **extra: Any) -> None:
    weir = {"scopes": [{"name": "stripe", "limit": limit}], "appLimit": app_limit}
    resp = client.post("/fn/register", json=sync_body(function("pay", weir=weir, **extra)))
    assert resp.status_code == 200, resp.text


def test_a_sync_creates_each_declared_capacity_once(client: TestClient) -> None:
    sync(client, 3)
    found = capacities(client)
    assert set(found) == {STRIPE, "app app"}
    stripe = found[STRIPE]
    assert (stripe["capacity"], stripe["declared"], stripe["drift"], stripe["revision"]) == (
        3,
        3,
        False,
        1,
    )
    assert found["app app"]["capacity"] == 4


def test_a_new_declaration_is_drift_never_an_overwrite(client: TestClient) -> None:
    sync(client, 3)
    sync(client, 7)
    stripe = capacities(client)[STRIPE]
    assert (stripe["capacity"], stripe["declared"], stripe["drift"]) == (3, 7, True)
    metrics = client.get("/metrics").text
    assert 'weir_capacity_drift{kind="concurrency",name="scope stripe"} -4.0' in metrics
    done = change(client, "reset", STRIPE, revision=stripe["revision"])
    assert done.status_code == 200, done.text
    assert (done.json()["data"]["capacity"], done.json()["data"]["drift"]) == (7, False)
    assert "scope stripe" not in client.get("/metrics").text


def test_set_with_a_stale_revision_is_a_409_and_changes_nothing(client: TestClient) -> None:
    sync(client, 3)
    first = change(client, "set", STRIPE, capacity=5, revision=1, actor="alice")
    assert first.status_code == 200, first.text
    assert first.json()["data"]["revision"] == 2
    stale = change(client, "set", STRIPE, capacity=9, revision=1)
    assert stale.status_code == 409
    assert "revision 2, not 1" in stale.json()["error"]
    assert stale.json()["current"]["capacity"] == 5
    assert capacities(client)[STRIPE]["capacity"] == 5
    history = client.get(f"/v1/capacity/{quote(STRIPE)}").json()["data"]["changes"]
    assert [(h["action"], h["old"], h["new"]) for h in history] == [
        ("set", 3, 5),
        ("created", None, 3),
    ]
    assert history[0]["actor"] == "alice (dev mode (no login))"


def test_the_id_addresses_a_capacity_as_well_as_its_name(client: TestClient) -> None:
    sync(client, 3)
    stripe = capacities(client)[STRIPE]
    assert client.get(f"/v1/capacity/{stripe['id']}").json()["data"]["name"] == STRIPE


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"capacity": 0, "revision": 1}, "capacity must be an integer from 1"),
        ({"capacity": "5", "revision": 1}, "capacity must be an integer from 1"),
        ({"capacity": True, "revision": 1}, "capacity must be an integer from 1"),
        ({"capacity": 5}, "revision must be the integer revision you read"),
        ({"capacity": 5, "revision": 0}, "revision must be the integer revision you read"),
        ({"capacity": 5, "revision": 10**30}, "revision must be the integer revision you read"),
        ({"capacity": 5, "revision": 1, "actor": "a\nb"}, "actor must be a short printable"),
        ([1, 2], "the body must be a JSON object"),
    ],
)
def test_bad_input_is_refused_saying_what_is_allowed(
    client: TestClient, body: Any, words: str
) -> None:
    sync(client, 3)
    resp = change(client, "set", STRIPE, **body) if isinstance(body, dict) else None
    if resp is None:
        resp = client.post(f"/v1/capacity/{quote(STRIPE)}/set", json=body)
    assert resp.status_code == 400
    assert words in resp.json()["error"]
    assert capacities(client)[STRIPE]["revision"] == 1


def test_a_body_that_is_not_json_is_refused(client: TestClient) -> None:
    sync(client, 3)
    resp = client.post(
        f"/v1/capacity/{quote(STRIPE)}/set",
        content=b"{nope",
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 400 and "not valid JSON" in resp.json()["error"]


def test_an_unknown_capacity_is_a_404(client: TestClient) -> None:
    assert client.get("/v1/capacity/nothing").status_code == 404
    assert client.get("/v1/capacity/a%00b").status_code == 404  # not even asked of the store
    assert change(client, "reset", "a\x00b", revision=1).status_code == 404
    resp = change(client, "set", "nothing", capacity=2, revision=1)
    assert resp.status_code == 404 and "no capacity named 'nothing'" in resp.json()["error"]


@pytest.mark.parametrize(
    ("weir", "words"),
    [
        ({"scopes": [{"name": f"s{i}", "limit": 1} for i in range(9)]}, "too_many_scopes"),
        ({"scopes": [{"name": "a\tb", "limit": 1}]}, "control character"),
        ({"scopes": [{"name": "x" * 513, "limit": 1}]}, "513 UTF-8 bytes"),
        ({"scopes": [{"name": "é" * 257, "limit": 1}]}, "514 UTF-8 bytes"),
        ({"scopes": [{"name": "", "limit": 1}]}, "is empty"),
        ({"scopes": [{"name": "s", "limit": 0}]}, "integer ≥ 1"),
        ({"scopes": [{"limit": 2}]}, "needs a static `name`, a CEL `key`, or both"),
        ({"scopes": [{"key": "event.data.(", "limit": 2}]}, "invalid expression"),
        ({"scopes": [{"name": "s", "limit": 1, "size": 2}]}, "is not a scope field"),
        ({"appLimit": 0}, "integer ≥ 1"),
        ({"lanes": 1}, "is not a Weir option"),
    ],
)
def test_sync_refuses_bad_scopes_naming_the_problem(
    client: TestClient, weir: dict[str, Any], words: str
) -> None:
    resp = client.post("/fn/register", json=sync_body(function("pay", weir=weir)))
    assert resp.status_code == 400, resp.text
    assert words in resp.text
    assert store_rows(client, "SELECT count(*) FROM capacities") == [(0,)]


def test_start_mode_needs_a_login_and_records_who_changed_it(tmp_path: Path) -> None:
    settings = start_settings(tmp_path)
    with TestClient(create_app(settings), LOCAL) as secured:
        token = {"authorization": f"Bearer {TOKEN}"}
        body = sync_body(function("pay", weir={"scopes": [{"name": "stripe", "limit": 3}]}))
        sdk = {"authorization": f"Bearer {bearer_hash(SIGNING_KEY)}"}
        assert secured.post("/fn/register", json=body, headers=sdk).status_code == 200
        assert secured.get("/v1/capacity").status_code == 401
        refused = change(secured, "set", STRIPE, capacity=4, revision=1)
        assert refused.status_code == 401
        done = secured.post(
            f"/v1/capacity/{quote(STRIPE)}/set", json={"capacity": 4, "revision": 1}, headers=token
        )
        assert done.json()["data"]["updated_by"] == "admin token"
        again = secured.post(
            f"/v1/capacity/{quote(STRIPE)}/set",
            json={"capacity": 2, "revision": 2, "actor": "bob"},
            auth=(USER, PASSWORD),
        )
        assert again.json()["data"]["updated_by"] == f"bob (user {USER})"


def test_a_rerun_whose_scope_key_now_breaks_the_rules_is_refused(client: TestClient) -> None:
    weir = {"scopes": [{"key": "event.data.user", "limit": 1}]}
    assert (
        client.post("/fn/register", json=sync_body(function("pay", weir=weir))).status_code == 200
    )
    [event_id] = client.post("/e/key", json={"name": "t/e", "data": {"user": "ann"}}).json()["ids"]
    [run] = client.get(f"/v1/events/{event_id}/runs").json()["data"]
    weir = {"scopes": [{"key": "event.data.missing", "limit": 1}]}
    assert (
        client.post("/fn/register", json=sync_body(function("pay", weir=weir))).status_code == 200
    )
    resp = client.post(f"/v1/runs/{run['run_id']}/rerun")
    assert resp.status_code == 409
    assert "the key expression 'event.data.missing' failed" in resp.json()["error"]
