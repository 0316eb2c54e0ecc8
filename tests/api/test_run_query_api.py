"""CEL queries over the runs and events lists, `GET /v1/runs?query=` and `GET /v1/events?query=`,
on both stores: matches newest first, an empty page that still says where to search on, a
refusal that names what is wrong, rows the query fails on left out, and paging across windows
of a few rows (the `window` parameter) that finds every match once, in order."""

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from weir.expressions import Budget, configure_budget
from weir.platform.reads import query

from tests.support.seeded_runs import Seeded, runs_with_events

NOON = 1_767_268_800_000
ORDER = "event.data.customer_id == 'c-42' && output.total > 100"


def _seed(client: TestClient, seeded: list[Seeded]) -> list[str]:
    url = client.app.state.platform.settings.database_url  # type: ignore[attr-defined]
    engine = create_engine(url)
    try:
        return runs_with_events(engine, seeded, NOON)
    finally:
        engine.dispose()


def _shop() -> list[Seeded]:
    """Eight runs, oldest first: customer c-42's big orders are runs 1, 4 and 6."""
    return [
        Seeded("COMPLETED", {"total": 50}, {"customer_id": "c-42"}),
        Seeded("COMPLETED", {"total": 150}, {"customer_id": "c-42"}),
        Seeded("COMPLETED", {"total": 500}, {"customer_id": "c-7"}),
        Seeded("FAILED", {"name": "TimeoutError", "message": "API down"}, {"customer_id": "c-42"}),
        Seeded("COMPLETED", {"total": 101}, {"customer_id": "c-42"}),
        Seeded("COMPLETED", {"total": "lots"}, {"customer_id": "c-42"}),  # a string: no match
        Seeded("COMPLETED", {"total": 900}, {"customer_id": "c-42"}, function_id="fn-other"),
        Seeded("FAILED", {"name": "Error", "message": "card declined"}, {"customer_id": "c-9"}),
    ]


def _runs(client: TestClient, **params: Any) -> dict[str, Any]:
    answer = client.get("/v1/runs", params=params)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_a_query_matches_event_data_and_output_newest_first(client: TestClient) -> None:
    ids = _seed(client, _shop())
    found = _runs(client, query=ORDER)
    assert [r["run_id"] for r in found["data"]] == [ids[6], ids[4], ids[1]]
    searched = found["metadata"]["searched"]
    # runs 5 (a string total) and 3 (failed: no output) are errors, not matches
    assert searched == {"examined": 8, "errors": 2, "back_to": NOON, "complete": True}
    assert found["metadata"]["next"] is None
    # the list's own filters narrow the rows the query examines
    narrowed = _runs(client, query=ORDER, status="Completed", limit=1)
    assert [r["run_id"] for r in narrowed["data"]] == [ids[6]]
    assert narrowed["metadata"]["next"] == f"{NOON + 6000}.{ids[6]}"


def test_status_function_time_and_the_error_are_fields(client: TestClient) -> None:
    ids = _seed(client, _shop())

    def matched(query: str) -> list[str]:
        return [r["run_id"] for r in _runs(client, query=query)["data"]]

    assert matched("status == 'FAILED'") == [ids[7], ids[3]]
    assert matched("error.name == 'TimeoutError'") == [ids[3]]
    assert matched("error.message.contains('declined')") == [ids[7]]
    assert matched("function_slug == 'fn-other'") == [ids[6]]
    assert matched(f"created_at >= {NOON + 5000} && ended_at - started_at == 5") == ids[5:][::-1]
    assert matched("created < timestamp('2026-01-01T12:00:02Z')") == [ids[1], ids[0]]
    by_id = f"attempt == 0 && event.name == 'shop/order.placed' && id == '{ids[2]}'"
    assert matched(by_id) == [ids[2]]


def test_no_match_is_an_empty_page_with_the_cursor_to_search_older(client: TestClient) -> None:
    ids = _seed(client, _shop())
    whole = _runs(client, query="output.total > 10000")
    assert whole["data"] == []
    assert whole["metadata"]["next"] is None and whole["metadata"]["searched"]["complete"]
    part = _runs(client, query="output.total > 10000", window=3)
    assert part["data"] == []
    assert part["metadata"]["next"] == f"{NOON + 5000}.{ids[5]}"  # examined runs 7, 6 and 5
    assert part["metadata"]["searched"] == {
        "examined": 3,
        "errors": 2,  # run 7 failed (no output), run 5's total is a string
        "back_to": NOON + 5000,
        "complete": False,
    }


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("status == ", "syntax error at line 1"),
        ("customer == 'c-42'", "unknown identifier `customer`"),
        ("status.name == 'x'", "`status` is a string; it has no field `name`"),
        ("error.stack == ''", "`error` has no field `stack`; its fields are `name`, `message`"),
        ("event.payload.x == 1", "`event` has no field `payload`"),
        ("function == 'x'", "`function` is reserved in CEL; use `function_slug`"),
        ("status == 'failed'", "`status` is one of QUEUED, RUNNING, COMPLETED, FAILED"),
        ("status == 1", "`status` is a string; it cannot be compared with 1, an int"),
        ("1 < event.name", "`event.name` is a string; it cannot be compared with 1"),
        ("created_at > '2026-01-01'", "`created_at` is an int; it cannot be compared with"),
        ("created > 5", 'write timestamp("2026-12-01T00:00:00Z")'),
    ],
)
def test_a_bad_query_is_refused_naming_what_is_wrong(
    client: TestClient, query: str, words: str
) -> None:
    _seed(client, _shop()[:1])
    for path in ("/v1/runs", "/v1/events"):
        if path == "/v1/events" and query.startswith(("status", "error", "created", "function")):
            continue  # not fields of an event query at all: refused as unknown names there
        answer = client.get(path, params={"query": query})
        assert answer.status_code == 400, answer.text
        assert answer.json()["error"].startswith("invalid query: ")
        assert words in answer.json()["error"], answer.json()


def test_a_required_status_or_function_is_read_through_its_index(client: TestClient) -> None:
    ids = _seed(client, _shop())
    # runs 7 and 3 failed: the (status, created_at) index hands the scan only those two
    failed = _runs(client, query="status == 'FAILED' && error.message != ''", window=2)
    assert [r["run_id"] for r in failed["data"]] == [ids[7], ids[3]]
    assert failed["metadata"]["searched"]["examined"] == 2
    other = _runs(client, query="output.total > 0 && function_id == 'fn-other'", window=1)
    assert [r["run_id"] for r in other["data"]] == [ids[6]]
    # under `||` nothing is required: the scan examines the newest rows, as without it
    either = _runs(client, query="status == 'FAILED' || output.total == 900", window=2)
    assert [r["run_id"] for r in either["data"]] == [ids[7], ids[6]]
    # the query and the list's filter disagree: no run can match, nothing is examined
    none = _runs(client, query="status == 'FAILED'", status="Completed")
    assert none["data"] == [] and none["metadata"]["searched"]["examined"] == 0
    assert none["metadata"]["next"] is None


def test_a_page_stops_at_its_deadline_with_the_cursor_to_go_on(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _seed(client, _shop())
    monkeypatch.setattr(query, "QUERY_DEADLINE_MS", 0)  # past after the first row
    seen: list[str] = []
    cursor, pages = None, 0
    while pages < 20:
        params = {
            "query": "event.data.customer_id == 'c-42'",
            **({"before": cursor} if cursor else {}),
        }
        found = _runs(client, **params)
        assert found["metadata"]["searched"]["examined"] == 1
        seen += [r["run_id"] for r in found["data"]]
        pages, cursor = pages + 1, found["metadata"]["next"]
        if cursor is None:
            break
    assert pages == 8  # one run a page, and the last says nothing older is left
    assert seen == [ids[i] for i in (6, 5, 4, 3, 1, 0)]


def test_a_costly_evaluation_over_its_budget_fails_that_row_only(client: TestClient) -> None:
    huge = Seeded("COMPLETED", {"total": 1, "items": list(range(30_000))}, {"customer_id": "c-1"})
    ids = _seed(client, [Seeded("COMPLETED", {"total": 1, "items": [1]}, {}), huge])
    previous = configure_budget(Budget(time_ms=1))
    try:
        found = _runs(client, query="output.items.map(x, x * x).filter(y, y == 1).size() == 1")
    finally:
        configure_budget(previous)
    assert [r["run_id"] for r in found["data"]] == [ids[0]]
    assert found["metadata"]["searched"]["errors"] == 1  # the run with 30,000 items


def test_a_bad_cursor_window_or_status_is_refused(client: TestClient) -> None:
    for params in ({"before": "yesterday"}, {"window": 0}, {"limit": 500}, {"status": "Done"}):
        answer = client.get("/v1/runs", params={"query": "true", **params})
        assert answer.status_code == 400, params
        assert next(iter(params)) in answer.json()["error"]
    assert "Completed" in client.get("/v1/runs", params={"status": "Done"}).json()["error"]


def test_rows_the_query_fails_on_do_not_match(client: TestClient) -> None:
    ids = _seed(client, _shop())
    # a string total against a number, a failed run's null output, a non-boolean result
    found = _runs(client, query="output.total > 100")
    assert [r["run_id"] for r in found["data"]] == [ids[6], ids[4], ids[2], ids[1]]
    assert found["metadata"]["searched"]["errors"] == 3  # runs 7, 5 and 3
    assert _runs(client, query="output")["data"] == []
    assert _runs(client, query="output")["metadata"]["searched"]["errors"] == 8


def test_paging_across_windows_finds_every_match_once_newest_first(client: TestClient) -> None:
    seeded = [Seeded("COMPLETED", {"n": i}, {"even": i % 2 == 0}) for i in range(23)]
    ids = _seed(client, seeded)
    expected = [ids[i] for i in range(22, -1, -1) if i % 2 == 0]
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        params: dict[str, Any] = {"query": "event.data.even", "window": 4, "limit": 3}
        found = _runs(client, **params, **({"before": cursor} if cursor else {}))
        pages += 1
        assert len(found["data"]) <= 3 and found["metadata"]["searched"]["examined"] <= 4
        seen += [r["run_id"] for r in found["data"]]
        cursor = found["metadata"]["next"]
        if cursor is None:
            break
    assert seen == expected
    assert pages >= 23 // 4


def test_an_event_query_pages_events_newest_first(client: TestClient) -> None:
    _seed(client, _shop())
    found = client.get(
        "/v1/events", params={"query": "event.data.customer_id == 'c-42' && received_at > 0"}
    ).json()
    assert [e["id"] for e in found["data"]] == ["e-6", "e-5", "e-4", "e-3", "e-1", "e-0"]
    assert found["metadata"]["searched"]["complete"]
    part = client.get(
        "/v1/events", params={"query": "event.data.customer_id == 'c-7'", "window": 2}
    ).json()
    assert part["data"] == []  # events 7 and 6 examined
    assert part["metadata"]["searched"]["back_to"] == NOON + 6000
    rest = client.get(
        "/v1/events",
        params={"query": "event.data.customer_id == 'c-7'", "before": part["metadata"]["next"]},
    ).json()
    assert [e["id"] for e in rest["data"]] == ["e-2"]
    first = client.get("/v1/events", params={"query": "event.id == 'e-7'", "window": 2}).json()
    assert [e["id"] for e in first["data"]] == ["e-7"]


def test_a_required_event_name_is_read_through_its_index(client: TestClient) -> None:
    seeded = _shop()
    seeded[2] = Seeded("COMPLETED", {"total": 500}, {"customer_id": "c-7"}, event_name="shop/x")
    _seed(client, seeded)
    query = "event.name == 'shop/x' && event.data.customer_id == 'c-7'"
    found = client.get("/v1/events", params={"query": query, "window": 1}).json()
    assert [e["id"] for e in found["data"]] == ["e-2"]  # the only shop/x event: 1 examined
    assert found["metadata"]["searched"]["examined"] == 1
    other = client.get("/v1/events", params={"query": query, "name": "billing/"}).json()
    assert other["data"] == [] and other["metadata"]["searched"]["examined"] == 0


def test_the_lists_without_a_query_page_by_cursor(client: TestClient) -> None:
    ids = _seed(client, _shop())
    first = _runs(client, limit=5)
    assert [r["run_id"] for r in first["data"]] == ids[::-1][:5]
    assert "searched" not in first["metadata"]
    rest = _runs(client, limit=5, before=first["metadata"]["next"])
    assert [r["run_id"] for r in rest["data"]] == ids[::-1][5:]
    assert rest["metadata"]["next"] is None
    events = client.get("/v1/events", params={"limit": 3}).json()
    assert [e["id"] for e in events["data"]] == ["e-7", "e-6", "e-5"]
