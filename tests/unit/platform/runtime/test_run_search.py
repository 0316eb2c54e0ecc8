"""The runs list's search and the bulk actions' run set, on a real store: a run id or an event
id finds its runs through the indexes, other text is looked for in the outputs of a bounded
window of runs (newest first from the page's cursor; the listing says where it stopped), and
the active runs of one function come newest first however many finished runs it has."""

from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.reads import bulk
from weir.platform.reads.runs import RunListing, run_listing
from weir.platform.runtime import runs
from weir.platform.store.views import queries
from weir.platform.store.views.queries import RunPage

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


def test_search_finds_text_past_ascii_in_an_output(database_url: str) -> None:
    h = Harness(database_url, config("a"))
    h.send(NOON, {"n": 1})
    [run] = h.runs("a")
    h.advance(NOON + 1)
    with h.tx(NOON + 1) as tx:
        runs.finish_run(tx, run.id, RunStatus.COMPLETED, {"said": "café ☕ 🚀"})
    assert _ids(h, RunPage(search="café ☕")) == [run.id]
    assert _ids(h, RunPage(search="🚀")) == [run.id]
    assert _ids(h, RunPage(search="cafe")) == []


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


def _finished_with_outputs(h: Harness, outputs: list[str]) -> list[str]:
    """One run per output, each queued 1 ms after the last; their ids, oldest first."""
    for i in range(len(outputs)):
        h.send(NOON + i, {"n": i})
    made = h.runs("a")
    for run, output in zip(made, outputs, strict=True):
        with h.tx(NOON + 100) as tx:
            runs.finish_run(tx, run.id, RunStatus.COMPLETED, {"said": output})
    return [r.id for r in made]


def _listing(h: Harness, page: RunPage) -> RunListing:
    with h.engine.connect() as conn:
        return run_listing(conn, page)


def test_a_text_search_examines_a_window_of_runs_and_says_where_it_stopped(
    database_url: str,
) -> None:
    # newest first: ids[11] .. ids[0]; "needle" in runs 10, 7, 6 and 1
    outputs = ["hay"] * 12
    for i in (1, 6, 7, 10):
        outputs[i] = f"a needle {i}"
    h = Harness(database_url, config("a"))
    ids = _finished_with_outputs(h, outputs)
    first = _listing(h, RunPage(search="needle", search_window=5))
    # the window is runs 11..7: two matches, and the search stopped at run 7
    assert [r.id for r in first.runs] == [ids[10], ids[7]]
    assert not first.full
    edge = first.search_edge
    assert edge is not None and edge[1] == ids[7]
    further = _listing(h, RunPage(search="needle", search_window=5, before=edge))
    assert [r.id for r in further.runs] == [ids[6]]  # runs 6..2
    assert further.search_edge is not None and further.search_edge[1] == ids[2]
    last = _listing(h, RunPage(search="needle", search_window=5, before=further.search_edge))
    assert [r.id for r in last.runs] == [ids[1]]  # runs 1 and 0: nothing older is left
    assert last.search_edge is None


def test_a_full_page_of_matches_pages_on_as_usual(database_url: str) -> None:
    h = Harness(database_url, config("a"))
    ids = _finished_with_outputs(h, ["needle"] * 6)
    page = _listing(h, RunPage(search="needle", search_window=4, limit=2))
    assert [r.id for r in page.runs] == [ids[5], ids[4]]
    assert page.full and page.search_edge is None  # "older runs" continues from the page


def test_a_search_that_saw_every_run_does_not_offer_to_search_further(
    database_url: str,
) -> None:
    h = Harness(database_url, config("a"))
    _finished_with_outputs(h, ["hay"] * 5)
    assert _listing(h, RunPage(search="needle", search_window=5)).search_edge is None
    assert _listing(h, RunPage(search="needle", search_window=4)).search_edge is not None


def test_ids_are_found_beyond_the_window_and_other_filters_bound_it(database_url: str) -> None:
    h = Harness(database_url, config("a"), config("b"))
    h.send(NOON, {"n": 0})
    oldest_a = next(iter(h.runs("a")))
    for i in range(1, 6):
        h.send(NOON + i, {"n": i})
    for run in h.runs():
        with h.tx(NOON + 100) as tx:
            runs.finish_run(tx, run.id, RunStatus.COMPLETED, {"fn": run.function_id})
    # an id is answered by the indexes, whatever the window
    found = _listing(h, RunPage(search=oldest_a.id, search_window=1))
    assert [r.id for r in found.runs] == [oldest_a.id] and found.search_edge is None
    # the window counts only runs of the filtered function: 3 of a's 6 runs, all matching
    only_a = _listing(h, RunPage(search='"a"', function_id="a", search_window=3))
    newest_a = [r.id for r in reversed(h.runs("a"))]
    assert [r.id for r in only_a.runs] == newest_a[:3]
    assert only_a.search_edge is not None and only_a.search_edge[1] == newest_a[2]


def test_runs_queued_in_the_same_millisecond_as_the_windows_oldest_are_examined_too(
    database_url: str,
) -> None:
    h = Harness(database_url, config("a"))
    h.send(NOON, {"n": 0})
    for i in range(1, 4):
        h.send(NOON + 5, {"n": i})  # three runs share one millisecond
    made = h.runs("a")
    for run in made:
        with h.tx(NOON + 100) as tx:
            runs.finish_run(tx, run.id, RunStatus.COMPLETED, {"said": "needle"})
    first = _listing(h, RunPage(search="needle", search_window=2))
    tied = sorted((r.id for r in made if r.created_at == NOON + 5), reverse=True)
    assert [r.id for r in first.runs] == tied  # all three, though the window is two
    assert first.search_edge == (NOON + 5, tied[-1])
    rest = _listing(h, RunPage(search="needle", search_window=2, before=first.search_edge))
    assert [r.id for r in rest.runs] == [made[0].id] and rest.search_edge is None
