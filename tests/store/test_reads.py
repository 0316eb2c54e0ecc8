"""The read models of weir.platform.reads: the typed views the API and the UI show."""

from weir.platform.foundation.vocabulary import RunStatus, WaitKind
from weir.platform.reads import events, runs
from weir.platform.reads.records import EventPage, RunPage, StoredEvent
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records
from weir.platform.store.records import waits as wait_records

from tests.support.store_kit import Store


def new_run(run_id: str, *event_ids: str, created_at: int = 10) -> run_records.NewRun:
    return run_records.NewRun(
        id=run_id,
        function_id="fn-1",
        event_ids=event_ids,
        created_at=created_at,
        score=created_at,
        lane="lane-a",
    )


def seed(store: Store) -> None:
    batch = [
        StoredEvent(f"ev-{i}", f"app/thing-{i}", None, 1_000 + i, 2_000 + i, {"n": i})
        for i in range(3)
    ]
    store.write(lambda c: event_records.insert_events(c, batch))
    store.write(lambda c: run_records.insert_run(c, new_run("run-a", "ev-0", "ev-1")))
    store.write(lambda c: run_records.insert_run(c, new_run("run-b", "ev-1", created_at=20)))
    store.write(lambda c: step_records.save_memo(c, "run-a", "s1", 0, "first", "StepRun", "1", 30))
    store.write(
        lambda c: event_records.record_outcome(c, "ev-1", "fn-2", "rate_limited", None, "", 5)
    )
    store.write(
        lambda c: wait_records.insert_wait(
            c,
            wait_records.NewWait(
                kind=WaitKind.WAIT,
                run_id="run-a",
                step_id="w",
                event_name="app/go",
                created_at=40,
                expires_at=1_040,
            ),
        )
    )


def test_a_run_view_holds_its_steps_and_events_trigger_first(store: Store) -> None:
    seed(store)
    view = store.read(lambda c: runs.run_view(c, "run-a", 0, {}))
    assert view is not None
    assert view.run.status == RunStatus.QUEUED
    assert [s.step_id for s in view.steps] == ["s1"]
    assert [e.id for e in view.events] == ["ev-0", "ev-1"]
    assert view.progress == f"{RunStatus.QUEUED}/{len(view.history)}+0/1/{view.state.kind}"
    assert store.read(lambda c: runs.run_view(c, "run-x", 0, {})) is None


def test_the_run_state_api_reads_answer_none_for_an_unknown_run(store: Store) -> None:
    seed(store)
    assert store.read(lambda c: runs.run_event_payloads(c, "run-a")) == [{"n": 0}, {"n": 1}]
    assert store.read(lambda c: runs.run_memos(c, "run-a")) == {"s1": 1}
    assert store.read(lambda c: runs.run_event_payloads(c, "run-x")) is None
    assert store.read(lambda c: runs.run_memos(c, "run-x")) is None


def test_a_run_listing_names_each_runs_trigger_and_says_when_the_page_is_full(
    store: Store,
) -> None:
    seed(store)
    listing = store.read(lambda c: runs.run_listing(c, RunPage(limit=1)))
    assert [r.id for r in listing.runs] == ["run-b"]
    assert listing.event_names == {"ev-1": "app/thing-1"}
    assert listing.full
    assert not store.read(lambda c: runs.run_listing(c, RunPage(limit=5))).full


def test_an_event_detail_holds_its_runs_and_outcomes(store: Store) -> None:
    seed(store)
    detail = store.read(lambda c: events.event_detail(c, "ev-1"))
    assert detail is not None
    assert [r.id for r in detail.runs] == ["run-a", "run-b"]
    assert [o.outcome for o in detail.outcomes] == ["rate_limited"]
    assert store.read(lambda c: events.event_detail(c, "ev-9")) is None


def test_event_summaries_list_newest_first_with_their_runs(store: Store) -> None:
    seed(store)
    listing = store.read(lambda c: events.event_listing(c, EventPage(limit=2)))
    assert [s.event.id for s in listing.events] == ["ev-2", "ev-1"]
    assert [[r.id for r in s.runs] for s in listing.events] == [[], ["run-a", "run-b"]]
    assert listing.full
    one = store.read(lambda c: events.event_summary(c, "ev-0"))
    assert one is not None and [r.id for r in one.runs] == ["run-a"]
    assert store.read(lambda c: events.event_summary(c, "ev-9")) is None
