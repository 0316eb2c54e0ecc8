"""Rate meters in /v1/capacity: a shared meter and a function's own rolling window get a stored
limit at their first sync, listed beside concurrency capacities; set and reset with the
revision read and the actor recorded; drift when the code declares another rate; bad limits
(past a window's 100,000) refused saying what is allowed; runs started at the stored limit."""

from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import function, sync_body
from tests.support.capacity_api import capacities, change

METER = "meter stripe"
OWN = "app-pay rolling window 1h [event.data.user]"


def sync(client: TestClient, meter_limit: int, own_limit: int = 50) -> None:
    windows = [
        {"limit": meter_limit, "window": "1s", "rateName": "stripe"},
        {"limit": own_limit, "window": "1h", "key": "event.data.user"},
    ]
    body = sync_body(function("pay", weir={"rollingWindows": windows}))
    resp = client.post("/fn/register", json=body)
    assert resp.status_code == 200, resp.text


def test_meters_and_windows_are_stored_at_their_first_sync(client: TestClient) -> None:
    sync(client, 10)
    found = capacities(client)
    assert {n: (c["kind"], c["capacity"], c["declared"]) for n, c in found.items()} == {
        METER: ("meter", 10, 10),
        OWN: ("meter", 50, 50),
    }


def test_set_records_the_actor_and_a_new_rate_in_code_is_drift(client: TestClient) -> None:
    sync(client, 10)
    done = change(client, "set", METER, capacity=4, revision=1, actor="carol")
    assert done.status_code == 200, done.text
    assert (done.json()["data"]["capacity"], done.json()["data"]["revision"]) == (4, 2)
    history = client.get(f"/v1/capacity/{quote(METER)}").json()["data"]["changes"]
    assert (history[0]["action"], history[0]["old"], history[0]["new"]) == ("set", 10, 4)
    assert history[0]["actor"].startswith("carol")

    sync(client, 20)  # the code now declares another rate: stored stays, drift shows
    meter = capacities(client)[METER]
    assert (meter["capacity"], meter["declared"], meter["drift"]) == (4, 20, True)
    assert (
        'weir_capacity_drift{kind="meter",name="meter stripe"} -16.0' in client.get("/metrics").text
    )
    reset = change(client, "reset", METER, revision=meter["revision"])
    assert reset.status_code == 200
    assert (reset.json()["data"]["capacity"], reset.json()["data"]["drift"]) == (20, False)


def test_runs_start_at_the_stored_limit(client: TestClient) -> None:
    sync(client, 10)
    assert change(client, "set", METER, capacity=1, revision=1).status_code == 200
    events = [{"name": "t/e", "data": {"user": f"u{n}"}} for n in range(4)]
    ids = client.post("/e/key", json=events).json()["ids"]
    runs = [client.get(f"/v1/events/{e}/runs").json()["data"][0]["run_id"] for e in ids]

    def waiting() -> list[str]:
        found = [client.get(f"/v1/runs/{r}").json()["data"].get("waiting") for r in runs]
        return [w["words"] for w in found if w]

    # At the declared 10 per second all four would start at once; at the stored 1, the others
    # wait for the window and say so.
    metered: list[str] = []
    for _ in range(200):
        metered = [w for w in waiting() if "1 per 1000 ms window is full" in w]
        if len(metered) >= 2:
            break
    assert len(metered) >= 2, waiting()


@pytest.mark.parametrize(
    ("name", "body", "status", "words"),
    [
        (METER, {"capacity": 100_001, "revision": 1}, 400, "from 1 to 100000"),
        (METER, {"capacity": 0, "revision": 1}, 400, "capacity must be an integer from 1"),
        (METER, {"capacity": 5, "revision": 9}, 409, "revision 1, not 9"),
        ("meter nope", {"capacity": 5, "revision": 1}, 404, "no capacity named 'meter nope'"),
    ],
)
def test_bad_changes_are_refused_saying_what_is_allowed(
    client: TestClient, name: str, body: dict[str, Any], status: int, words: str
) -> None:
    sync(client, 10)
    resp = change(client, "set", name, **body)
    assert resp.status_code == status, resp.text
    assert words in resp.json()["error"]
    assert capacities(client)[METER]["capacity"] == 10
