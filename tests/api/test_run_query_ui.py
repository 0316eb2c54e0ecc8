"""The runs and events pages take a CEL query in their search boxes: matches shown, a bounded
scan offering "search older", a bad query refused on the page (400) saying what is wrong, and
no bulk cancel offered beside a query (it would not be limited to the query's matches)."""

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from weir.platform.reads import query

from tests.support.seeded_runs import Seeded, runs_with_events

NOON = 1_767_268_800_000


def _seed(client: TestClient) -> list[str]:
    url = client.app.state.platform.settings.database_url  # type: ignore[attr-defined]
    engine = create_engine(url)
    seeded = [
        Seeded("COMPLETED", {"total": 10 * i}, {"customer_id": "c-42" if i % 3 else "c-1"})
        for i in range(9)
    ]
    try:
        return runs_with_events(engine, seeded, NOON)
    finally:
        engine.dispose()


def test_the_runs_page_shows_a_querys_matches(client: TestClient) -> None:
    ids = _seed(client)
    page = client.get("/runs", params={"query": "event.data.customer_id == 'c-1'"})
    assert page.status_code == 200
    shown = re.findall(r'<tr data-id="([^"]+)"', page.text)
    assert shown == [ids[6], ids[3], ids[0]]
    assert 'id="search-further"' not in page.text  # every run was examined
    assert "data-live" not in page.text.split('id="runs-table"')[1].split(">")[0]
    none = client.get("/runs", params={"query": "output.total > 1000"})
    assert "No run matches this query." in none.text


def test_a_query_page_offers_to_search_older_runs(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = _seed(client)
    monkeypatch.setattr(query, "QUERY_WINDOW", 4)
    wanted = {"query": "event.data.customer_id == 'c-1'"}
    first = client.get("/ui/api/runs", params=wanted).json()
    assert [r["id"] for r in first["runs"]] == [ids[6]]  # runs 8 to 5 examined
    assert first["searched"]["window"] == 4 and first["searched"]["back_to_ms"] == NOON + 5000
    page = client.get("/runs", params=wanted).text
    assert 'id="search-further"' in page and "This query looked at 4 runs" in page
    further = first["searched"]["further"]
    second = client.get("/ui/api/runs", params={**wanted, "before": further}).json()
    assert [r["id"] for r in second["runs"]] == [ids[3]]  # runs 4 to 1
    further = second["searched"]["further"]
    last = client.get("/ui/api/runs", params={**wanted, "before": further}).json()
    assert [r["id"] for r in last["runs"]] == [ids[0]]
    assert last["searched"] is None  # run 0 was the oldest


def test_a_bad_query_is_refused_on_the_page_saying_what_is_wrong(client: TestClient) -> None:
    _seed(client)
    page = client.get("/runs", params={"query": "output.total >", "status": "COMPLETED"})
    assert page.status_code == 400
    assert "This query is not valid: syntax error at line 1" in page.text
    assert 'aria-invalid="true"' in page.text and "Fix the query above" in page.text
    as_json = client.get("/ui/api/runs", params={"query": "nope == 1"})
    assert as_json.status_code == 400
    assert "unknown identifier `nope`" in as_json.json()["error"]
    events = client.get("/events", params={"query": "status == 'FAILED'"})
    assert events.status_code == 400 and "unknown identifier `status`" in events.text


def test_no_bulk_cancel_is_offered_beside_a_query(client: TestClient) -> None:
    _seed(client)
    # the runs seeded are finished; what matters is that the preview is not even asked for
    page = client.get("/runs", params={"query": "true", "status": "QUEUED"})
    assert 'action="/runs/cancel"' not in page.text


def test_the_events_page_shows_a_querys_matches(client: TestClient) -> None:
    _seed(client)
    page = client.get("/events", params={"query": "event.data.customer_id == 'c-1'"})
    assert page.status_code == 200
    shown = re.findall(r"&#34;id&#34;: &#34;(e-[0-9]+)&#34;", page.text)
    assert shown == ["e-6", "e-3", "e-0"], shown
    assert (
        "No event matches this query."
        in client.get("/events", params={"query": "event.data.customer_id == 'nobody'"}).text
    )
    as_json = client.get("/ui/api/events", params={"query": "event.data.customer_id == 'c-1'"})
    assert [e["payload"].count('"c-1"') for e in as_json.json()["events"]] == [1, 1, 1]
