"""/v1/lanes: a function's busy lanes with their holder (since when, its fence), queue length
and first run in line; one lane; its line in order, paged; bad input refused saying what is
allowed, in the API's error shape."""

import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app

from tests.api.helpers import LOCAL, function, sync_body
from tests.api.start_mode import TOKEN, start_settings


def sync(client: TestClient, *functions: dict[str, Any]) -> None:
    resp = client.post("/fn/register", json=sync_body(*functions))
    assert resp.status_code == 200, resp.text


def laned(fn_id: str, **lane: str) -> dict[str, Any]:
    return function(fn_id, weir={"lane": lane or {"key": "event.data.customer"}})


def send(client: TestClient, *customers: str) -> list[str]:
    """One event per customer, in order; the ids of the runs they started."""
    events = [{"name": "t/e", "data": {"customer": c}} for c in customers]
    ids = client.post("/e/key", json=events).json()["ids"]
    runs = []
    for event_id in ids:
        runs += [r["run_id"] for r in client.get(f"/v1/events/{event_id}/runs").json()["data"]]
    return runs


def lanes_of(client: TestClient, **params: Any) -> dict[str, Any]:
    resp = client.get("/v1/lanes", params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


def test_a_functions_lanes_show_holder_fence_queue_and_who_is_next(client: TestClient) -> None:
    sync(client, laned("pay"), function("plain", event="t/other"))
    [r1, r2, r3, z1] = send(client, "acme", "acme", "acme", "zed")
    listing = lanes_of(client, function="app-pay")
    assert listing["metadata"]["next_cursor"] is None
    by_key = {lane["key"]: lane for lane in listing["data"]}
    assert set(by_key) == {"acme", "zed"}
    acme = by_key["acme"]
    assert acme["function"] == "app-pay" and acme["name"] is None
    assert acme["queued"] == 2 and acme["fence"] >= 1  # fences are compared, not counted
    assert acme["holder"]["run_id"] == r1 and acme["holder"]["fence"] == acme["fence"]
    assert isinstance(acme["holder"]["since"], int)
    assert acme["oldest_waiting"]["run_id"] == r2
    zed = by_key["zed"]
    assert zed["holder"]["run_id"] == z1 and zed["queued"] == 0 and zed["oldest_waiting"] is None

    one = client.get(f"/v1/lanes/{acme['lane']}").json()["data"]
    assert one == acme
    members = client.get(f"/v1/lanes/{acme['lane']}/members", params={"limit": 1}).json()
    assert [m["run_id"] for m in members["data"]] == [r2]
    rest = client.get(
        f"/v1/lanes/{acme['lane']}/members",
        params={"cursor": members["metadata"]["next_cursor"]},
    ).json()
    assert [m["run_id"] for m in rest["data"]] == [r3]
    assert rest["metadata"]["next_cursor"] is None

    everyone = lanes_of(client)  # across functions
    assert sorted(lane["lane"] for lane in everyone["data"]) == sorted(
        lane["lane"] for lane in listing["data"]
    )


def test_a_lane_is_found_by_its_key_while_busy_and_taken_again_with_a_higher_fence(
    client: TestClient,
) -> None:
    sync(client, laned("pay"))
    [r1] = send(client, "acme")
    [found] = lanes_of(client, function="app-pay", key="acme")["data"]
    assert found["key"] == "acme" and found["holder"]["run_id"] == r1
    assert lanes_of(client, function="app-pay", key="nobody")["data"] == []
    assert client.delete(f"/v1/runs/{r1}").status_code == 200
    # A call of r1 still in flight keeps the lane until it is over (a failing call: moments)
    deadline = time.monotonic() + 10
    while lanes_of(client, function="app-pay", key="acme")["data"]:
        assert time.monotonic() < deadline, "the lane stayed busy"
        time.sleep(0.05)
    assert lanes_of(client, function="app-pay")["data"] == []  # free: not listed, no row
    [r2] = send(client, "acme")
    [again] = lanes_of(client, function="app-pay", key="acme")["data"]
    assert again["holder"]["run_id"] == r2 and again["fence"] > found["fence"]


def test_cancelling_a_run_in_line_shortens_the_queue(client: TestClient) -> None:
    sync(client, laned("pay"))
    [_, r2, r3] = send(client, "acme", "acme", "acme")
    assert client.delete(f"/v1/runs/{r2}").status_code == 200
    [acme] = lanes_of(client, function="app-pay")["data"]
    assert acme["queued"] == 1 and acme["oldest_waiting"]["run_id"] == r3


def test_a_named_lane_is_listed_under_each_function_naming_it(client: TestClient) -> None:
    sync(client, laned("pay", name="billing"), laned("refund", name="billing"))
    ids = client.post(
        "/e/key", json=[{"name": "t/e", "data": {"customer": "acme"}} for _ in range(2)]
    ).json()["ids"]
    assert len(ids) == 2
    for slug in ("app-pay", "app-refund"):
        [lane] = lanes_of(client, function=slug)["data"]
        assert lane["name"] == "billing" and lane["function"] is None
        assert lane["queued"] == 3  # two events, each starting both functions: 4 runs, one holds


def test_pages_are_bounded_and_chain_by_cursor(client: TestClient) -> None:
    sync(client, laned("pay"))
    send(client, *(f"c{n}" for n in range(7)))
    seen: list[str] = []
    params: dict[str, Any] = {"function": "app-pay", "limit": 3}
    while True:
        page = lanes_of(client, **params)
        assert len(page["data"]) <= 3
        seen += [lane["lane"] for lane in page["data"]]
        if page["metadata"]["next_cursor"] is None:
            break
        params["cursor"] = page["metadata"]["next_cursor"]
    assert len(seen) == len(set(seen)) == 7


@pytest.mark.parametrize(
    ("path", "params", "status", "words"),
    [
        ("/v1/lanes", {"function": "nope"}, 404, "no synced function has the slug or id 'nope'"),
        ("/v1/lanes", {"function": "app-plain"}, 400, "declares no lane"),
        ("/v1/lanes", {"limit": "0"}, 400, "limit must be a whole number from 1 to 500"),
        ("/v1/lanes", {"limit": "lots"}, 400, "limit must be a whole number from 1 to 500"),
        ("/v1/lanes", {"cursor": "garbage"}, 400, "cursor is not one this listing gave"),
        ("/v1/lanes", {"key": "acme"}, 400, "key needs function"),
        ("/v1/lanes", {"function": "app-pay", "key": "k" * 513}, 400, "at most 512 characters"),
        ("/v1/lanes/" + "f" * 32, {}, 404, "no busy lane 'ffffffffffffffffffffffffffffffff'"),
        ("/v1/lanes/" + "f" * 32 + "/members", {}, 404, "GET /v1/lanes lists the busy ones"),
        ("/v1/lanes/a%00b", {}, 404, "no busy lane"),
    ],
)
def test_bad_input_is_refused_saying_what_is_wrong(
    client: TestClient, path: str, params: dict[str, Any], status: int, words: str
) -> None:
    sync(client, laned("pay"), function("plain", event="t/other"))
    resp = client.get(path, params=params)
    assert resp.status_code == status, resp.text
    assert words in resp.json()["error"]


def test_a_bad_member_cursor_or_limit_of_a_real_lane_is_a_400(client: TestClient) -> None:
    sync(client, laned("pay"))
    send(client, "acme", "acme")
    [acme] = lanes_of(client, function="app-pay")["data"]
    for params, words in (
        ({"cursor": "WyJ4Il0"}, "cursor is not one this listing gave"),
        ({"limit": "501"}, "limit must be a whole number from 1 to 500"),
    ):
        resp = client.get(f"/v1/lanes/{acme['lane']}/members", params=params)
        assert resp.status_code == 400 and words in resp.json()["error"]


def test_start_mode_needs_a_login(tmp_path: Path) -> None:
    with TestClient(create_app(start_settings(tmp_path)), LOCAL) as secured:
        assert secured.get("/v1/lanes").status_code == 401
        assert secured.get("/v1/lanes/" + "f" * 32).status_code == 401
        ok = secured.get("/v1/lanes", headers={"authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200 and ok.json()["data"] == []
