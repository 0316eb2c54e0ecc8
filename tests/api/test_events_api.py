"""POST /e/{key}: answers, errors that name the problem, and nothing half-stored."""

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import function, store_rows, sync_body


def _event_count(client: TestClient) -> int:
    return int(store_rows(client, "SELECT count(*) FROM events")[0][0])


def test_one_event_or_many_get_one_id_each(client: TestClient) -> None:
    one = client.post("/e/key", json={"name": "a/b", "data": {"x": 1}})
    assert one.status_code == 200
    assert len(one.json()["ids"]) == 1
    many = client.post("/e/key", json=[{"name": "a/b"}, {"name": "a/c", "data": {}}])
    assert many.json() == {"ids": many.json()["ids"], "status": 200}
    assert len(set(many.json()["ids"])) == 2
    assert _event_count(client) == 3


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (b"{", "not valid JSON"),
        (b'{"data": {}}', "'name' must be a non-empty string"),
        (b'{"name": "inngest/function.failed"}', "reserved"),
        (b'{"name": "a", "data": [1]}', "'data' must be a JSON object"),
        (b'{"name": "a", "ts": 1}', "outside the years 1980 to 2100"),
    ],
)
def test_bad_events_get_a_400_naming_the_problem(
    client: TestClient, body: bytes, fragment: str
) -> None:
    resp = client.post("/e/key", content=body, headers={"content-type": "application/json"})
    assert resp.status_code == 400
    assert fragment in resp.json()["error"]


def test_one_bad_event_rejects_the_whole_request(client: TestClient) -> None:
    resp = client.post("/e/key", json=[{"name": "ok"}, {"name": ""}])
    assert resp.status_code == 400
    assert "event 1" in resp.json()["error"]
    assert _event_count(client) == 0


def test_an_event_starts_a_run_of_each_matching_function(client: TestClient) -> None:
    client.post(
        "/fn/register",
        json=sync_body(
            function("exact", event="shop/order.paid"),
            function("prefix", event="shop/*"),
            function("dot", event="shop/order.*"),
            function("other", event="shop/cart"),
            function(
                "filtered",
                event="shop/order.paid",
                triggers=[{"event": "shop/order.paid", "expression": "event.data.amount > 100"}],
            ),
        ),
    )
    event_id = client.post(
        "/e/key", json={"name": "shop/order.paid", "data": {"amount": 50}}
    ).json()["ids"][0]
    runs = client.get(f"/v1/events/{event_id}/runs").json()["data"]
    assert sorted(r["function_id"] for r in runs) == ["app-dot", "app-exact", "app-prefix"]


def test_unknown_ids_get_a_404_that_names_them(client: TestClient) -> None:
    resp = client.get("/v1/runs/nope")
    assert resp.status_code == 404
    assert "nope" in resp.json()["error"]


def test_run_state_api_serves_events_and_steps_for_use_api(client: TestClient) -> None:
    client.post("/fn/register", json=sync_body(function("a", event="t/state")))
    event_id = client.post("/e/key", json={"name": "t/state", "data": {"n": 1}}).json()["ids"][0]
    run_id = client.get(f"/v1/events/{event_id}/runs").json()["data"][0]["run_id"]
    batch = client.get(f"/v0/runs/{run_id}/batch").json()
    assert [(e["name"], e["data"]) for e in batch] == [("t/state", {"n": 1})]
    assert client.get(f"/v0/runs/{run_id}/actions").json() == {}
    assert client.get("/v0/runs/missing/actions").status_code == 404
