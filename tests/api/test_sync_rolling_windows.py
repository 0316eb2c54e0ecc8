"""Rolling windows and shared meters at sync: bad input refused with what is allowed, and one
rate per meter across every app (checked against the catalog, in the sync's transaction)."""

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.helpers import APP_URL, function, store_rows, sync_body


def windows(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"weir": {"rollingWindows": list(entries)}}


def app_body(name: str, *functions: dict[str, Any]) -> dict[str, Any]:
    url = APP_URL.replace("/api/inngest", f"/{name}/api/inngest")
    fixed = [{**fn, "id": f"{name}-{fn['name']}"} for fn in functions]
    return {**sync_body(*fixed), "appname": name, "url": url}


def test_windows_are_registered_in_platform_units(client: TestClient) -> None:
    body = sync_body(
        function(
            "w",
            **windows(
                {"limit": 10, "window": "1s", "key": "event.data.acct", "rateName": "stripe"},
                {"limit": 500, "window": 3_600_000},
            ),
        )
    )
    assert client.post("/fn/register", json=body).status_code == 200
    registry = client.app.state.platform.registry  # type: ignore[attr-defined]
    [(fn, _)] = registry.triggered_by("t/e")
    got = [(w.limit, w.window_ms, w.key, w.rate_name) for w in fn.config.rolling_windows]
    assert got == [(10, 1_000, "event.data.acct", "stripe"), (500, 3_600_000, None, None)]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"limit": 0, "window": "1s"}, "limit': must be an integer from 1 to 100000, got 0"),
        ({"limit": 100_001, "window": "1s"}, "from 1 to 100000, got 100001"),
        ({"limit": 1.5, "window": "1s"}, "limit': must be an integer from 1 to 100000"),
        ({"limit": 1, "window": "999ms"}, "window': must be a duration from 1s to 1d"),
        ({"limit": 1, "window": "25h"}, "window': must be a duration from 1s to 1d"),
        ({"limit": 1, "window": 999}, "from 1000 (1s) to 86400000 (1d), got 999"),
        ({"limit": 1, "window": 1000.5}, "whole milliseconds"),
        ({"limit": 1, "window": "1.0005s"}, "finer than a millisecond"),
        ({"limit": 1}, "window': is missing"),
        ({"limit": 1, "window": "1s", "key": "event.("}, "key': invalid expression"),
        ({"limit": 1, "window": "1s", "rateName": ""}, "rateName': must be a non-empty string"),
        ({"limit": 1, "window": "1s", "rateName": "a\nb"}, "control character"),
    ],
)
def test_bad_windows_are_refused_saying_what_is_allowed(
    client: TestClient, entry: dict[str, Any], expected: str
) -> None:
    resp = client.post("/fn/register", json=sync_body(function("w", **windows(entry))))
    assert resp.status_code == 400
    [problem] = resp.json()["problems"]
    assert "app-w" in problem and "weir.rollingWindows[0]" in problem
    assert expected in problem
    assert store_rows(client, "SELECT count(*) FROM functions") == [(0,)]


def test_unknown_weir_keys_and_too_many_windows_are_refused(client: TestClient) -> None:
    nine = [{"limit": n, "window": "1s"} for n in range(1, 10)]
    body = sync_body(
        function("typo", weir={"rollingWindow": [{"limit": 1, "window": "1s"}]}),
        function("many", **windows(*nine)),
        function("twice", **windows({"limit": 1, "window": "1s"}, {"limit": 1, "window": "1s"})),
    )
    problems = client.post("/fn/register", json=body).json()["problems"]
    assert len(problems) == 3
    assert (
        "'weir.rollingWindow': is not a Weir option; allowed: lane, rollingWindows" in (problems[0])
    )
    assert "at most 8 entries are allowed, got 9" in problems[1]
    assert "declares the same window twice" in problems[2]


def test_one_meter_at_two_rates_in_one_sync_is_refused(client: TestClient) -> None:
    body = sync_body(
        function("a", **windows({"limit": 10, "window": "1s", "rateName": "stripe"})),
        function("b", **windows({"limit": 20, "window": "1s", "rateName": "stripe"})),
    )
    resp = client.post("/fn/register", json=body)
    assert resp.status_code == 400
    [problem] = resp.json()["problems"]
    assert problem.startswith("function 'app-b', option 'weir.rollingWindows': ")
    assert "meter 'stripe' is declared here at 20 per 1s" in problem
    assert "function 'app-a' of app 'app' declares it at 10 per 1s" in problem


def test_a_meter_keeps_one_rate_across_apps(client: TestClient) -> None:
    stripe = {"limit": 10, "window": "1s", "rateName": "stripe"}
    billing = app_body("billing", function("charge", **windows(stripe)))
    assert client.post("/fn/register", json=billing).status_code == 200
    same = app_body("shop", function("refund", **windows({**stripe, "key": "event.data.a"})))
    assert client.post("/fn/register", json=same).status_code == 200  # same rate: shared
    other = {**stripe, "window": "2s"}
    clash = app_body("ledger", function("payout", **windows(other)))
    resp = client.post("/fn/register", json=clash)
    assert resp.status_code == 400
    [problem] = resp.json()["problems"]
    assert "function 'ledger-payout'" in problem
    assert "meter 'stripe' is declared here at 10 per 2s" in problem
    assert "of app 'billing' declares it at 10 per 1s" in problem
    slugs = {row[0] for row in store_rows(client, "SELECT slug FROM functions")}
    assert slugs == {"billing-charge", "shop-refund"}  # the refused sync registered nothing
    # An app may change its own meter's rate once no other app declares it.
    billing_alone = app_body("billing", function("charge", **windows(other)))
    assert client.post("/fn/register", json=billing_alone).status_code == 400  # shop still 1s
    shop_gone = app_body("shop", function("refund"))
    assert client.post("/fn/register", json=shop_gone).status_code == 200
    assert client.post("/fn/register", json=billing_alone).status_code == 200
