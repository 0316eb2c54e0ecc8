"""Retention: finished runs and events older than the cut-off go, with everything hanging
off them, in batches of a given size; unfinished runs and the events they need stay."""

import asyncio

from sqlalchemy import Connection
from weir.platform.foundation.vocabulary import ENDED, RunStatus
from weir.platform.functions import Batching, Debounce
from weir.platform.runtime.retention import Retention, window_problems
from weir.platform.store import retention
from weir.platform.store.flow import gate_state
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import signals as signal_records
from weir.platform.store.records import steps as step_records

from tests.support.flow_harness import config
from tests.support.store_kit import Store

DAY = 24 * 3600 * 1000
NOW = 100 * DAY
OLD, RECENT = NOW - 40 * DAY, NOW - 1 * DAY
CUTOFF = NOW - 30 * DAY


def add_event(store: Store, event_id: str, at: int) -> None:
    event = event_records.StoredEvent(
        event_id, "t/e", None, at, at, {"name": "t/e", "id": event_id}
    )
    store.write(lambda c: event_records.insert_events(c, [event]))
    store.write(
        lambda c: event_records.record_outcome(c, event_id, "fn", "rate_limited", None, "", at)
    )


def add_run(store: Store, run_id: str, event_id: str, at: int, status: str = "COMPLETED") -> None:
    def write(c: Connection) -> None:
        run_records.insert_run(c, run_records.NewRun(run_id, "fn", [event_id], at, at, "lane"))
        if status in ENDED:
            run_records.finish(c, run_id, RunStatus(status), at, None)
        elif status == RunStatus.RUNNING:
            run_records.mark_started(c, run_id, at)
        step_records.save_memo(c, run_id, "s1", 0, "s1", "StepRun", '{"data":1}', at)
        step_records.add_history(c, run_id, "call", "COMPLETED", at, at, step_id="s1")
        made = signal_records.Delivery(f"d-{run_id}", "sig", run_id, "s1", at, False, None, None)
        signal_records.record_delivery(c, made)

    store.write(write)


def count(store: Store, table: str, column: str, value: str) -> int:
    rows = store.rows(f"SELECT count(*) FROM {table} WHERE {column} = :v", v=value)
    return int(rows[0][0])  # type: ignore[call-overload]


def test_old_finished_runs_go_with_their_steps_history_and_links(store: Store) -> None:
    add_event(store, "e-old", OLD)
    add_run(store, "r-old", "e-old", OLD)
    add_run(store, "r-recent", "e-old", RECENT)  # a rerun, say: ended yesterday
    add_run(store, "r-running", "e-old", OLD, status="RUNNING")
    assert store.write(lambda c: retention.delete_old_runs(c, CUTOFF, 100)) == 1
    for table in ("runs", "steps", "history", "signal_deliveries"):
        column = "id" if table == "runs" else "run_id"
        assert count(store, table, column, "r-old") == 0
        assert count(store, table, column, "r-recent") == 1
        assert count(store, table, column, "r-running") == 1
    assert count(store, "event_runs", "run_id", "r-old") == 0
    assert count(store, "event_runs", "run_id", "r-running") == 1


def test_old_events_go_with_their_outcomes_unless_an_unfinished_run_needs_them(
    store: Store,
) -> None:
    add_event(store, "e-done", OLD)
    add_run(store, "r-done", "e-done", OLD)
    add_event(store, "e-needed", OLD)
    add_run(store, "r-waiting", "e-needed", OLD, status="QUEUED")
    add_event(store, "e-recent", RECENT)
    assert store.write(lambda c: retention.delete_old_events(c, CUTOFF, 100)) == 1
    assert count(store, "events", "id", "e-done") == 0
    assert count(store, "event_outcomes", "event_id", "e-done") == 0
    assert count(store, "event_runs", "event_id", "e-done") == 0
    assert count(store, "events", "id", "e-needed") == 1
    assert count(store, "events", "id", "e-recent") == 1
    assert count(store, "event_outcomes", "event_id", "e-recent") == 1


def test_each_call_deletes_at_most_one_batch(store: Store) -> None:
    for n in range(5):
        add_event(store, f"e{n}", OLD)
        add_run(store, f"r{n}", f"e{n}", OLD)
    batches = [store.write(lambda c: retention.delete_old_runs(c, CUTOFF, 2)) for _ in range(4)]
    assert batches == [2, 2, 1, 0]
    batches = [store.write(lambda c: retention.delete_old_events(c, CUTOFF, 2)) for _ in range(4)]
    assert batches == [2, 2, 1, 0]


class FakeClock:
    def __init__(self, now: int) -> None:
        self.now = now

    def now_ms(self) -> int:
        return self.now

    async def sleep_ms(self, ms: int) -> None:
        self.now += ms


def test_the_background_sweep_cuts_at_now_minus_the_kept_age(store: Store) -> None:
    clock = FakeClock(NOW)
    for n in range(3):
        add_event(store, f"e{n}", OLD)
        add_run(store, f"r{n}", f"e{n}", OLD)
    add_event(store, "e-recent", RECENT)
    sweeper = Retention(store.db, clock, keep_ms=30 * DAY, batch=2)

    async def sweep() -> list[int]:
        return [await sweeper.step() for _ in range(3)]

    # a batch of runs and a batch of events per step, until nothing old is left
    assert asyncio.run(sweep()) == [4, 2, 0]
    assert count(store, "events", "id", "e-recent") == 1
    clock.now = RECENT + 30 * DAY + 1  # a month later, yesterday's event is old too
    assert asyncio.run(sweeper.step()) == 1
    assert count(store, "events", "id", "e-recent") == 0


def test_the_loop_ends_when_stopped(store: Store) -> None:
    sweeper = Retention(store.db, FakeClock(NOW), keep_ms=DAY)

    async def run_then_stop() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(sweeper.run(stop))
        await asyncio.sleep(0)
        stop.set()
        await asyncio.wait_for(task, 10)

    asyncio.run(run_then_stop())


def test_events_an_open_batch_or_debounce_window_holds_are_kept(store: Store) -> None:
    for event_id in ("e-batched-1", "e-batched-2", "e-debounced", "e-loose"):
        add_event(store, event_id, OLD)
    store.write(
        lambda c: gate_state.save(
            c, "batch", "k1", {"batch_id": "b1", "event_ids": ["e-batched-1", "e-batched-2"]}, None
        )
    )
    store.write(lambda c: gate_state.save(c, "debounce", "k2", {"event_id": "e-debounced"}, None))
    held = store.read(retention.held_by_gates)
    assert held == {"e-batched-1", "e-batched-2", "e-debounced"}
    # the held ones are the oldest: a batch of one still reaches the loose event behind them
    assert store.write(lambda c: retention.delete_old_events(c, CUTOFF, 1, held)) == 1
    assert count(store, "events", "id", "e-loose") == 0
    for event_id in held:
        assert count(store, "events", "id", event_id) == 1
    assert store.write(lambda c: retention.delete_old_events(c, CUTOFF, 1, held)) == 0


def test_the_sweep_keeps_what_gates_hold(store: Store) -> None:
    add_event(store, "e-held", OLD)
    store.write(lambda c: gate_state.save(c, "debounce", "k", {"event_id": "e-held"}, None))
    assert asyncio.run(Retention(store.db, FakeClock(NOW), keep_ms=30 * DAY).step()) == 0
    assert count(store, "events", "id", "e-held") == 1


def test_a_retention_shorter_than_a_declared_window_is_named() -> None:
    fn = config("slow", batching=Batching(max_size=2, timeout_ms=2 * DAY))
    debounced = config("calm", debounce=Debounce(period_ms=DAY, timeout_ms=3 * DAY))
    problems = [str(p) for p in window_problems([fn, debounced], keep_ms=2 * DAY)]
    assert problems == [
        "function 'calm', option 'debounce.timeout': 3d is longer than this Weir's retention "
        "of 2d (--retention): the window's events would outlive it; shorten the window, or "
        "give Weir a retention of at least 3d"
    ]
    assert window_problems([fn, debounced], keep_ms=0) == []
