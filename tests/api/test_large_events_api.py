"""A large event (its body parsed in a worker process, the event kept as bytes) against the same
event taken in-process: the same stored bytes, the same functions matched with the same keys,
the same request body for the app, the same 400s, and nothing stored from a refused body."""

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from weir.app import create_app
from weir.expressions import Budget, configure_budget, current_budget
from weir.expressions._pool import POOL
from weir.platform import service
from weir.platform.executor.driver import load_call_state, ready_to_send
from weir.platform.executor.request import CallState, Unparsed, build_body
from weir.platform.ingest.validate import LARGE_EVENT_BYTES
from weir.platform.settings import Settings

from tests.api.helpers import LOCAL, function, store_rows, sync_body

ITEMS = [{"sku": f"sku_{n}", "qty": n % 5 + 1, "price": 9.99} for n in range(100)]
DATA: dict[str, Any] = {
    "pad": "p" * LARGE_EVENT_BYTES,  # a large event, cheap to evaluate
    "kind": "a",
    "tenant": "t-7",
    "amount": 2.0,
    "text": "é\u2028😀",
    "keys": {"\ue000": 1, "😀": 2},
    "items": ITEMS,
}
FUNCTIONS = [
    function(
        "kind-a",
        event="t/big",
        triggers=[{"event": "t/big", "expression": 'event.data.kind == "a"'}],
    ),
    function(
        "kind-b",
        event="t/big",
        triggers=[{"event": "t/big", "expression": 'event.data.kind == "b"'}],
    ),
    function(
        "has-sku",
        event="t/big",
        triggers=[{"event": "t/big", "expression": 'event.data.items.exists(i, i.sku == "sku_7")'}],
    ),
    function(
        "missing",
        event="t/big",
        triggers=[{"event": "t/big", "expression": "event.data.none == 1"}],
    ),
    function(
        "keyed",
        event="t/big",
        concurrency=[{"limit": 2, "key": "event.data.tenant + '/' + string(event.data.amount)"}],
    ),
]


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    """As tests/api/conftest.py's, with room for costly evaluations on a loaded machine: these
    tests compare results, and an evaluation over its budget would have none."""
    budget = Budget(time_ms=10_000)
    settings = Settings(database_url=database_url, sqlite_synchronous="OFF", cel_budget=budget)
    previous = current_budget()
    try:
        with TestClient(create_app(settings), base_url=LOCAL) as test_client:
            yield test_client
    finally:
        configure_budget(previous)


def _send(client: TestClient, monkeypatch: pytest.MonkeyPatch, body: bytes, large: bool) -> Any:
    """POST the body the large way (a worker parses it) or, as for small bodies, in-process."""
    with monkeypatch.context() as patch:
        if not large:
            patch.setattr(service, "PARSE_ON_LOOP_BYTES", 1 << 40)
        return client.post("/e/key", content=body, headers={"content-type": "application/json"})


def _event(event_id: str) -> bytes:
    return json.dumps(
        {"name": "t/big", "id": event_id, "ts": 1_700_000_000_000, "data": DATA}
    ).encode()


def _stored(client: TestClient, internal_id: str) -> str:
    [(text,)] = store_rows(client, f"SELECT payload FROM events WHERE id = '{internal_id}'")
    return str(text)


def _runs(client: TestClient, internal_id: str) -> dict[str, tuple[str, str]]:
    sql = "SELECT f.slug, r.event_ids, r.keys, r.id FROM runs r JOIN functions f"
    sql += " ON f.id = r.function_id"
    rows = store_rows(client, sql)
    return {
        str(fn): (str(keys), str(run_id))
        for fn, ids, keys, run_id in rows
        if json.loads(ids) == [internal_id]
    }


def test_a_large_event_is_stored_and_matched_as_the_same_event_taken_small(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert client.post("/fn/register", json=sync_body(*FUNCTIONS)).status_code == 200
    assert POOL.wait_until_ready(current_budget())
    assert len(json.dumps(DATA, separators=(",", ":"))) > LARGE_EVENT_BYTES
    small = _send(client, monkeypatch, _event("small-1"), large=False)
    large = _send(client, monkeypatch, _event("large-1"), large=True)
    assert small.status_code == large.status_code == 200
    [small_id], [large_id] = small.json()["ids"], large.json()["ids"]

    small_text = _stored(client, small_id)
    assert _stored(client, large_id) == small_text.replace('"id":"small-1"', '"id":"large-1"')
    assert json.loads(small_text)["data"] == DATA

    small_runs, large_runs = _runs(client, small_id), _runs(client, large_id)
    assert sorted(small_runs) == sorted(large_runs) == ["app-has-sku", "app-keyed", "app-kind-a"]
    assert small_runs["app-keyed"][0] == large_runs["app-keyed"][0]  # same key text and hash
    assert "t-7/2" in large_runs["app-keyed"][0]

    # The app gets byte for byte the body it got when every event was parsed in-process.
    run_id = large_runs["app-kind-a"][1]
    engine = create_engine(client.app.state.platform.settings.database_url)  # type: ignore[attr-defined]
    try:
        with engine.connect() as conn:
            state = load_call_state(conn, run_id)
    finally:
        engine.dispose()
    assert state is not None and isinstance(state.events[0], Unparsed)
    ready = asyncio.run(ready_to_send(state))
    parsed = CallState(state.run, [json.loads(_stored(client, large_id))], state.memos)
    assert _request(ready) == _request(parsed)


def _request(state: CallState) -> bytes:
    return build_body(state, fn_id="app-kind-a", step_id="step", attempt=0, max_attempts=4)


BAD = [
    {"name": "t/big", "data": {"n": 2**53}},
    {"name": "t/big\u0000", "data": {}},
    {"name": "t/big", "data": {"deep": json.loads("[" * 300 + "]" * 300)}},
    {"name": "t/big", "ts": "soon"},
]


@pytest.mark.parametrize("bad", BAD)
def test_a_large_body_gets_the_same_400_and_stores_nothing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, bad: dict[str, Any]
) -> None:
    body = json.dumps([{"name": "t/big", "data": DATA}, bad]).encode()
    small = _send(client, monkeypatch, body, large=False)
    large = _send(client, monkeypatch, body, large=True)
    assert small.status_code == large.status_code == 400
    assert large.json() == small.json()
    assert large.json()["error"].startswith("event 1: ")
    assert store_rows(client, "SELECT count(*) FROM events") == [(0,)]
