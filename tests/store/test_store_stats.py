"""The metrics endpoint's reads: queue depth by state, the oldest due item's wait, stored
admission outcomes, and unfinished runs per waiting gate."""

import json
from typing import Any

from weir.platform.store import queue as q
from weir.platform.store import records, stats

from tests.support.store_kit import LEASE, Store, new_item

NOW = 1_000_000


def run_row(run_id: str, status: str, waiting: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": run_id,
        "function_id": "fn-1",
        "status": status,
        "event_ids": "[]",
        "created_at": NOW,
        "score": NOW,
        "lane": "lane-a",
        "waiting": None if waiting is None else json.dumps(waiting),
    }


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
            lambda c, n=n, o=outcome: records.record_outcome(c, f"ev{n}", "fn-1", o, None, "", NOW)
        )
    for run_id, status, gate in (
        ("r1", "QUEUED", "concurrency"),
        ("r2", "QUEUED", "concurrency"),
        ("r3", "RUNNING", "retry"),
        ("r4", "FAILED", "retry"),  # ended: waits for nothing any more
        ("r5", "RUNNING", None),
    ):
        waiting = None if gate is None else {"gate": gate, "key": "k", "until_ms": NOW}
        store.write(
            lambda c, r=run_row(run_id, status, waiting): records.insert_run(
                c, r, [f"ev-{r['id']}"]
            )
        )
    found = store.read(lambda c: stats.snapshot(c, NOW))
    assert found.outcomes == {"rate_limited": 2, "debounced": 1}
    assert found.waiting == {"concurrency": 2, "retry": 1}


def test_ping_proves_the_store_answers(store: Store) -> None:
    assert store.read(stats.ping) == 1
