"""Hostile JSON at every door that takes it: refused once with a 4xx that names where the
problem is and what is allowed, never a 500, and nothing stored that could not be served."""

import base64
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import function, store_rows, sync_body

SAFE = 2**53 - 1
DEEP = b"[" * 100_000 + b"]" * 100_000
JSON = {"content-type": "application/json"}


def _event_count(client: TestClient) -> int:
    return int(store_rows(client, "SELECT count(*) FROM events")[0][0])


# -- numbers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "path"),
    [
        (b'{"amount": 1e400}', "data.amount is Infinity"),
        (b'{"amount": -1e400}', "data.amount is -Infinity"),
        (b'{"amount": NaN}', "data.amount is NaN"),
        (b'{"amount": Infinity}', "data.amount is Infinity"),
        (f'{{"amount": {SAFE + 1}}}'.encode(), "data.amount is 9007199254740992"),
        (f'{{"a": [1, {{"b": {-SAFE - 1}}}]}}'.encode(), "data.a[1].b is -9007199254740992"),
        (f'{{"n": {2**64 + 1}}}'.encode(), "data.n is 18446744073709551617"),
        (b'{"odd key": 1e999}', 'data["odd key"] is Infinity'),
    ],
)
def test_numbers_an_sdk_cannot_read_back_are_refused_at_ingest_naming_the_path(
    client: TestClient, data: bytes, path: str
) -> None:
    body = b'[{"name": "ok/first"}, {"name": "t/n", "data": ' + data + b"}]"
    resp = client.post("/e/key", content=body, headers=JSON)
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error.startswith(f"event 1: {path}"), error
    assert "±(2^53-1)" in error and "finite" in error
    assert _event_count(client) == 0  # the good first event is not half-stored


def test_the_largest_safe_integers_are_kept_exactly(client: TestClient) -> None:
    data = {"max": SAFE, "min": -SAFE, "big": 1e300, "tiny": 5e-324}
    event_id = client.post("/e/key", json={"name": "t/n", "data": data}).json()["ids"][0]
    served = client.get(f"/v1/events/{event_id}").json()["data"]["data"]
    assert served == data


def test_a_lone_surrogate_in_a_string_is_refused(client: TestClient) -> None:
    resp = client.post("/e/key", content=b'{"name": "t/s", "data": {"s": "\\ud800"}}', headers=JSON)
    assert resp.status_code == 400
    assert "data.s holds a lone UTF-16 surrogate" in resp.json()["error"]


# -- control characters ------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["\x00", "\n", "\r", "\t", "\x1b", "\x7f", "\x85", "\u2028"])
@pytest.mark.parametrize("field", ["name", "id", "v"])
def test_control_characters_in_names_and_ids_are_refused(
    client: TestClient, char: str, field: str
) -> None:
    event = {"name": "t/ok", field: f"a{char}b"}
    resp = client.post("/e/key", content=json.dumps(event).encode(), headers=JSON)
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert f"'{field}' holds the control character {char!r} at position 1" in error
    assert "printable" in error
    assert _event_count(client) == 0


def test_unicode_names_are_still_welcome(client: TestClient) -> None:
    resp = client.post("/e/key", json={"name": "café/überweisung ✓ 注文", "id": "ü-1"})
    assert resp.status_code == 200


# -- deep nesting ------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/fn/register", "/e/key", "/v0/gql"])
def test_deeply_nested_json_is_a_400_at_every_json_endpoint(client: TestClient, path: str) -> None:
    resp = client.post(path, content=DEEP, headers=JSON)
    assert resp.status_code == 400, resp.text
    assert "JSON" in resp.text


def test_nesting_past_the_limit_inside_an_event_is_refused_naming_the_limit(
    client: TestClient,
) -> None:
    data = b"[" * 300 + b"]" * 300
    resp = client.post(
        "/e/key", content=b'{"name": "t/d", "data": {"x": ' + data + b"}}", headers=JSON
    )
    assert resp.status_code == 400
    assert "nested deeper than 254 levels" in resp.json()["error"]


# -- sync --------------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [b"1e400", b"NaN", str(2**63).encode()])
def test_a_sync_body_with_numbers_that_cannot_be_kept_is_a_400(
    client: TestClient, number: bytes
) -> None:
    body = json.dumps(sync_body(function("a"))).encode()
    body = body.replace(b'"functions":', b'"extra": {"n": ' + number + b'}, "functions":')
    resp = client.post("/fn/register", content=body, headers=JSON)
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert "extra.n is" in error and "±(2^53-1)" in error


@pytest.mark.parametrize("ts", [b"1e400", b"NaN", b"-Infinity", str(2**70).encode()])
def test_a_ts_that_is_no_finite_number_gets_the_ts_message(client: TestClient, ts: bytes) -> None:
    resp = client.post("/e/key", content=b'{"name": "t/ts", "ts": ' + ts + b"}", headers=JSON)
    assert resp.status_code == 400, resp.text
    assert "'ts'" in resp.json()["error"] and "Unix milliseconds" in resp.json()["error"]


def _with_url(url: str) -> dict[str, Any]:
    fn = function("a")
    fn["steps"]["step"]["runtime"]["url"] = url
    return sync_body(fn)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (sync_body(function("a") | {"name": "a\x00b"}), "'name': holds the control character"),
        (sync_body(function("a", event="t/\nx")), "'triggers[0].event': holds the control"),
        (sync_body(function("a")) | {"appname": "a\x00"}, "'appName': holds the control"),
        (sync_body(function("a") | {"id": "x" * 256}), "'id': must be at most 255 characters"),
        (sync_body(function("a") | {"name": "x" * 256}), "'name': must be at most 255"),
        (sync_body(function("a")) | {"sdk": "s" * 65}, "'sdk': must be at most 64 characters"),
        (_with_url("http://[::1/x"), "'steps.step.runtime.url': must be an http"),
        (_with_url("http://127.0.0.1:1/a\x00b"), "'steps.step.runtime.url': must be an http"),
    ],
)
def test_sync_text_the_store_cannot_keep_is_a_400_naming_the_option(
    client: TestClient, body: dict[str, Any], fragment: str
) -> None:
    # each of these was stored on SQLite and a 500 on PostgreSQL (NUL, or over the column)
    resp = client.post("/fn/register", json=body)
    assert resp.status_code == 400, resp.text
    assert fragment in resp.json()["error"]


@pytest.mark.parametrize(
    "options",
    [
        {"cancel": [{"event": "t/stop", "if": "event.data.x == 'a\x00b'"}]},
        {"triggers": [{"event": "t/e", "expression": "event.data.x == '\x00'"}]},
    ],
)
def test_an_expression_holding_a_nul_is_refused_at_sync(
    client: TestClient, options: dict[str, Any]
) -> None:
    # valid CEL, but on PostgreSQL every event for the function was then a 500
    resp = client.post("/fn/register", json=sync_body(function("a") | options))
    assert resp.status_code == 400, resp.text
    assert "NUL character, which cannot be stored" in resp.json()["error"]


# -- deep or out-of-range input on the acting and paging routes ---------------------------------

# Past the JSON parser's recursion limit, yet small enough for a URL.
DEEP_CURSOR = base64.urlsafe_b64encode(b"[" * 5_000 + b"]" * 5_000).decode().rstrip("=")


def test_deep_json_on_capacity_set_and_reset_is_a_400(client: TestClient) -> None:
    for action in ("set", "reset"):
        deep = b"[" * 10_000 + b"]" * 10_000  # past the parser, within the body cap
        resp = client.post(f"/v1/capacity/any/{action}", content=deep, headers=JSON)
        assert resp.status_code == 400, resp.text
        assert "not valid JSON" in resp.json()["error"]


def test_a_deep_cursor_on_the_lanes_listing_and_a_lanes_members_is_a_400(
    client: TestClient,
) -> None:
    laned = function("pay", weir={"lane": {"key": "event.data.c"}})
    resp = client.post("/fn/register", json=sync_body(laned))
    assert resp.status_code == 200, resp.text
    client.post("/e/key", json=[{"name": "t/e", "data": {"c": "acme"}}] * 2)
    listing = client.get("/v1/lanes", params={"cursor": DEEP_CURSOR})
    assert listing.status_code == 400, listing.text
    assert "cursor is not one this listing gave" in listing.json()["error"]
    [lane] = client.get("/v1/lanes").json()["data"]
    members = client.get(f"/v1/lanes/{lane['lane']}/members", params={"cursor": DEEP_CURSOR})
    assert members.status_code == 400, members.text
    assert "cursor is not one this listing gave" in members.json()["error"]


@pytest.mark.parametrize("field", ["queued_after", "queued_before"])
@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64 + 1])
def test_bulk_cancel_times_past_the_stores_integers_are_a_400(
    client: TestClient, field: str, value: int
) -> None:
    resp = client.post("/v1/runs/cancel", content=f'{{"{field}": {value}}}', headers=JSON)
    assert resp.status_code == 400, resp.text
    assert f"{field} must be Unix milliseconds" in resp.json()["error"]


@pytest.mark.parametrize("value", [2**63, 2**64 + 1, -(2**63) - 1])
def test_a_simulated_ts_past_the_stores_integers_is_a_400(client: TestClient, value: int) -> None:
    resp = client.post("/fn/register", json=sync_body(function("sim")))
    assert resp.status_code == 200, resp.text
    body = f'{{"events": [{{"at_ms": 0, "ts_ms": {value}}}]}}'
    resp = client.post("/v1/functions/app-sim/simulate", content=body, headers=JSON)
    assert resp.status_code == 400, resp.text
    assert "events[0].ts_ms" in resp.json()["error"]
