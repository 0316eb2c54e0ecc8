"""App sync through POST /fn/register: no-op, replace, archive, and all-or-nothing validation."""

from fastapi.testclient import TestClient

from tests.api.helpers import function, store_rows, sync_body


def _functions(client: TestClient) -> dict[str, bool]:
    return {
        str(slug): bool(archived)
        for slug, archived in store_rows(client, "SELECT slug, archived FROM functions")
    }


def test_first_sync_registers_every_function(client: TestClient) -> None:
    resp = client.post("/fn/register", json=sync_body(function("a"), function("b")))
    assert resp.status_code == 200
    assert resp.json()["modified"] is True
    assert _functions(client) == {"app-a": False, "app-b": False}


def test_unchanged_sync_is_a_no_op(client: TestClient) -> None:
    body = sync_body(function("a"))
    client.post("/fn/register", json=body)
    again = client.post("/fn/register", json=body)
    assert again.status_code == 200
    assert again.json()["modified"] is False


def test_changed_sync_replaces_and_archives_removed_functions(client: TestClient) -> None:
    client.post("/fn/register", json=sync_body(function("a"), function("b")))
    resp = client.post("/fn/register", json=sync_body(function("a", event="t/other")))
    assert resp.json()["modified"] is True
    assert _functions(client) == {"app-a": False, "app-b": True}
    registry = client.app.state.platform.registry  # type: ignore[attr-defined]
    assert [fn.slug for fn, _ in registry.triggered_by("t/other")] == ["app-a"]
    assert registry.triggered_by("t/e") == []


def test_invalid_sync_lists_every_problem_and_registers_nothing(client: TestClient) -> None:
    bad = sync_body(
        function("ok"),
        function("t1", throttle={"limit": 0, "period": "0s"}),
        function(
            "t2",
            rateLimit={"limit": 1, "period": "48h"},
            batchEvents={"maxSize": 5, "timeout": "5s"},
            debounce={"period": "5s"},
        ),
    )
    resp = client.post("/fn/register", json=bad)
    assert resp.status_code == 400
    text = " | ".join(resp.json()["problems"])
    for expected in (
        "app-t1",
        "throttle.limit",
        "throttle.period",
        "app-t2",
        "rateLimit.period",
        "debounce",
    ):
        assert expected in text
    assert _functions(client) == {}


def test_register_rejects_a_body_that_is_not_json(client: TestClient) -> None:
    resp = client.post(
        "/fn/register", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert resp.status_code == 400
    assert "not valid JSON" in resp.json()["error"]
