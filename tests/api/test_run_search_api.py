"""A text search of the runs list looks at a bounded window of runs and says how far it got:
the list's JSON (`/ui/api/runs`) carries `searched` with the cursor that searches on, and the
runs page offers the same as a link. The window is made small here (the store's
SEARCH_WINDOW) so that a handful of runs outgrow it."""

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine
from weir.platform.store.views import queries

from tests.support.seeded_runs import finished_runs

NOON = 1_767_268_800_000


def _seed(client: TestClient, outputs: list[str]) -> list[str]:
    """Finished runs, one per output, 1 s apart (the last is the newest); their ids."""
    url = client.app.state.platform.settings.database_url  # type: ignore[attr-defined]
    engine = create_engine(url)
    try:
        return finished_runs(engine, outputs, NOON)
    finally:
        engine.dispose()


@pytest.fixture
def small_window(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(queries, "SEARCH_WINDOW", 3)
    return 3


def test_the_list_json_says_how_far_a_search_looked(client: TestClient, small_window: int) -> None:
    ids = _seed(client, ["needle 0", "hay", "needle 2", "hay", "needle 4", "hay"])
    first = client.get("/ui/api/runs", params={"search": "needle"}).json()
    # the three newest runs (5, 4, 3) were examined: one match
    assert [r["id"] for r in first["runs"]] == [ids[4]]
    assert first["next"] is None
    searched = first["searched"]
    assert searched["window"] == small_window
    assert searched["back_to_ms"] == NOON + 3000
    assert searched["further"].endswith(ids[3])
    rest = client.get("/ui/api/runs", params={"search": "needle", "before": searched["further"]})
    assert [r["id"] for r in rest.json()["runs"]] == [ids[2], ids[0]]
    assert rest.json()["searched"] is None  # runs 2, 1 and 0: none older is left


def test_a_search_that_covers_every_run_or_no_search_says_nothing(
    client: TestClient, small_window: int
) -> None:
    _seed(client, ["needle", "hay", "hay"])
    assert client.get("/ui/api/runs", params={"search": "needle"}).json()["searched"] is None
    assert client.get("/ui/api/runs").json()["searched"] is None


def test_the_runs_page_offers_to_search_older_runs(client: TestClient, small_window: int) -> None:
    ids = _seed(client, ["needle 0", "hay", "hay", "hay", "hay"])
    page = client.get("/runs", params={"search": "needle"}).text
    assert 'id="search-further"' in page
    assert "No run among those searched matches." in page
    assert f"before={NOON + 2000}.{ids[2]}" in page
    further = client.get("/runs", params={"search": "needle", "before": f"{NOON + 2000}.{ids[2]}"})
    assert ids[0] in further.text and 'id="search-further"' not in further.text
