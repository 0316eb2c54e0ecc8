"""The metrics endpoint's reads: queue depth by state, the oldest due item's wait, stored
admission outcomes, and unfinished runs per waiting gate."""

from typing import Any

from sqlalchemy import Connection
from weir.platform.foundation.vocabulary import RunStatus
from weir.platform.store import queue as q
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.views import stats

from tests.support.store_kit import LEASE, Store, new_item

NOW = 1_000_000


def add_run(c: Connection, run_id: str, status: str, waiting: dict[str, Any] | None) -> None:
    new = run_records.NewRun(run_id, "fn-1", [f"ev-{run_id}"], NOW, NOW, "lane-a")
    run_records.insert_run(c, new)
    if status == RunStatus.RUNNING:
        run_records.mark_started(c, run_id, NOW)
    elif status != RunStatus.QUEUED:
        run_records.finish(c, run_id, RunStatus(status), NOW, None)
    run_records.set_waiting(c, run_id, waiting)


def test_an_empty_store_reports_zeros(store: Store) -> None:
    assert store.read(lambda c: stats.snapshot(c, NOW)) == stats.StoreStats()


def test_queue_items_are_counted_by_state_and_the_oldest_due_wait_is_measured(
    store: Store,
) -> None:
    for item in (
        new_item("lane-a", available_at=NOW - 5_000),  # due for 5 s
        new_item("lane-b", available_at=NOW - 2_000),
        new_item("lane-c", available_at=NOW + 60_000),  # a sleep ending later
        new_item("lane-d", available_at=NOW - 9_000),  # about to be leased
    ):
        store.write(lambda c, item=item: q.enqueue(c, item))
    store.write(lambda c: q.claim(c, NOW - 9_000, 1, LEASE))  # only lane-d is due then
    found = store.read(lambda c: stats.snapshot(c, NOW))
    assert (found.queue_due, found.queue_scheduled, found.queue_leased) == (2, 1, 1)
    assert found.oldest_due_ms == 5_000


def test_outcomes_and_waiting_runs_are_counted_per_gate(store: Store) -> None:
    for n, outcome in enumerate(("rate_limited", "rate_limited", "debounced")):
        store.write(
            lambda c, n=n, o=outcome: event_records.record_outcome(
                c, f"ev{n}", "fn-1", o, None, "", NOW
            )
        )
    for run_id, status, gate in (
        ("r1", "QUEUED", "concurrency"),
        ("r2", "QUEUED", "concurrency"),
        ("r3", "RUNNING", "retry"),
        ("r4", "FAILED", "retry"),  # ended: waits for nothing any more
        ("r5", "RUNNING", None),
    ):
        waiting = None if gate is None else {"gate": gate, "key": "k", "until_ms": NOW}
        store.write(lambda c, r=run_id, s=status, w=waiting: add_run(c, r, s, w))
    found = store.read(lambda c: stats.snapshot(c, NOW))
    assert found.outcomes == {"rate_limited": 2, "debounced": 1}
    assert found.waiting == {"concurrency": 2, "retry": 1}


def test_ping_proves_the_store_answers(store: Store) -> None:
    assert store.read(stats.ping) == 1
