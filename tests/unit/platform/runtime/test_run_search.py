"""The runs list's search and the bulk actions' run set, on a real store: a run id or an event
id finds its runs through the indexes, other text is looked for in outputs, and the active
runs of one function come newest first however many finished runs it has."""

from weir.platform.reads import bulk
from weir.platform.store import queries
from weir.platform.store.queries import RunPage

from tests.support.flow_harness import NOON, Harness, config


def _ids(h: Harness, page: RunPage) -> list[str]:
    with h.engine.connect() as conn:
        return [r.id for r in queries.list_runs(conn, page)]


def test_search_finds_a_run_by_its_id_its_event_or_its_output(database_url: str) -> None:
    h = Harness(database_url, config("a"), config("b"))
    event_id = h.send(NOON, {"n": 1})
    h.send(NOON + 1, {"n": 2})
    a1 = next(r for r in h.runs("a") if r.event_ids[0] == event_id)
    h.finish(a1.id, NOON + 2)
    assert _ids(h, RunPage(search=a1.id)) == [a1.id]
    assert sorted(_ids(h, RunPage(search=event_id))) == sorted(
        r.id for r in h.runs() if r.event_ids[0] == event_id
    )
    assert _ids(h, RunPage(search=event_id, function_id="b")) == [
        r.id for r in h.runs("b") if r.event_ids[0] == event_id
    ]
    assert _ids(h, RunPage(search="no such text anywhere")) == []


def test_active_runs_of_a_function_newest_first_and_capped(database_url: str) -> None:
    h = Harness(database_url, config("a"), config("b"))
    for i in range(6):
        h.send(NOON + i, {"n": i})
    done = list(h.runs("a"))[:2]
    for run in done:
        h.finish(run.id, NOON + 10)
    active = sorted(
        (r for r in h.runs("a") if r.id not in {d.id for d in done}),
        key=lambda r: (r.created_at, r.id),
        reverse=True,
    )
    with h.engine.connect() as conn:
        found = bulk.active_run_ids(conn, RunPage(function_id="a"))
        capped = bulk.active_run_ids(conn, RunPage(function_id="a"), cap=2)
    assert found == [r.id for r in active]
    assert capped == found[:2]
