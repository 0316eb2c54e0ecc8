"""The run-state read model (reads/run_state.py) over a real store, SQLite and PostgreSQL:
each state derived from the rows the runtime writes, the same for one run and a page of runs;
and what the run view and the event effects make of the timeline and the outcomes."""

from typing import Any

from weir.platform.foundation.vocabulary import (
    EventEffect,
    EventOutcome,
    HistoryKind,
    RunStateKind,
    RunStatus,
    StepStatus,
)
from weir.platform.reads import events, run_state, runs
from weir.platform.reads.records import StoredEvent
from weir.platform.store import queue as q
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records
from weir.web.timeline import waterfall

from tests.support.store_kit import Store

T0 = 1_700_000_000_000
LEASE = 60_000
KEY = "c" * 64  # a concurrency key's hash
MOST = {"fn-1": 3}


def add_run(store: Store, run_id: str, **fields: Any) -> None:
    new = run_records.NewRun(
        id=run_id,
        function_id="fn-1",
        event_ids=fields.pop("event_ids", ()),
        created_at=fields.pop("created_at", T0),
        score=fields.pop("score", T0),
        lane=fields.pop("lane", "lane-a"),
        **fields,
    )
    store.write(lambda c: run_records.insert_run(c, new))


def enqueue(store: Store, run_id: str, *, at: int = T0, step_id: str = "step", **kw: Any) -> None:
    item = q.NewItem(
        kind="exec",
        available_at=at,
        score=kw.pop("score", at),
        lane=kw.pop("lane", "lane-a"),
        run_id=run_id,
        function_id="fn-1",
        step_id=step_id,
        **kw,
    )
    store.write(lambda c: q.enqueue(c, item))


def history(store: Store, run_id: str, kind: str, at: int, **kw: Any) -> None:
    ended = kw.pop("ended_at", None)
    status = kw.pop("status", StepStatus.RUNNING if ended is None else StepStatus.COMPLETED)
    store.write(lambda c: step_records.add_history(c, run_id, kind, status, at, ended, **kw))


def state(store: Store, run_id: str, now: int) -> run_state.RunState:
    run = store.read(lambda c: runs.run(c, run_id))
    assert run is not None
    return store.read(lambda c: run_state.run_state(c, run, now, MOST))


def test_a_due_call_waits_for_a_worker_and_priority_is_named(store: Store) -> None:
    add_run(store, "r1", score=T0 - 30_000)
    enqueue(store, "r1", at=T0, score=T0 - 30_000)
    got = state(store, "r1", T0 + 5)
    assert got.kind == RunStateKind.QUEUED
    assert got.words == (
        "queued: due since 2023-11-14T22:13:20.000+00:00, waiting for a worker; "
        "priority puts it 30 s ahead of runs queued with it"
    )
    assert (got.attempt, got.max_attempts, got.details) == (1, 3, {"priority_ms": 30_000})
    assert not state(store, "r1", T0 - 1).words.startswith("queued: due since")  # not due yet


def test_a_claimed_call_is_executing_since_its_claim_with_its_step_and_attempt(
    store: Store,
) -> None:
    add_run(store, "r1")
    history(
        store,
        "r1",
        HistoryKind.CALL,
        T0,
        ended_at=T0 + 5,
        detail={"ops": [{"op": "StepPlanned", "id": "h-charge", "name": "charge"}]},
    )
    enqueue(store, "r1", at=T0 + 10, step_id="h-charge")
    store.write(lambda c: q.claim(c, T0 + 20, 5, LEASE))
    got = state(store, "r1", T0 + 30)
    assert got.kind == RunStateKind.EXECUTING and not got.waiting
    assert (got.step_id, got.step_name, got.since) == ("h-charge", "charge", T0 + 20)
    assert got.words == (
        "executing step charge, attempt 1 of 3, since 2023-11-14T22:13:20.020+00:00"
    )
    assert state(store, "r1", T0 + 20 + LEASE + 1).kind == RunStateKind.QUEUED  # lease lost


def test_a_retry_in_backoff_says_when_in_clock_time_and_why(store: Store) -> None:
    add_run(store, "r1")
    enqueue(store, "r1", at=T0 + 4_000, attempt=1)
    waiting = {
        "gate": "retry",
        "key": "step",
        "until_ms": T0 + 4_000,
        "words": "x",
        "error": "boom",
    }
    store.write(lambda c: run_records.set_waiting(c, "r1", waiting))
    got = state(store, "r1", T0)
    assert got.kind == RunStateKind.BACKOFF
    assert got.to_json()["until"] == "2023-11-14T22:13:24.000+00:00"
    assert got.words == (
        "backoff: attempt 2 of 3 starts at 2023-11-14T22:13:24.000+00:00 "
        "(the last attempt failed: boom)"
    )


def test_a_retried_call_names_the_step_whose_error_it_retries(store: Store) -> None:
    add_run(store, "r1")
    error = {"op": "StepError", "id": "h1", "name": "charge", "error": {"message": "no"}}
    history(store, "r1", HistoryKind.CALL, T0, ended_at=T0 + 1, detail={"ops": [error]})
    enqueue(store, "r1", at=T0 + 500, attempt=1)
    waiting = {"gate": "retry", "key": "step", "until_ms": T0 + 500, "words": "x", "error": "no"}
    store.write(lambda c: run_records.set_waiting(c, "r1", waiting))
    got = state(store, "r1", T0 + 2)
    assert (got.kind, got.step_id, got.step_name) == (RunStateKind.BACKOFF, "h1", "charge")
    assert got.words.startswith("backoff: attempt 2 of 3 of step charge starts at ")
    store.write(lambda c: q.claim(c, T0 + 600, 5, LEASE))
    got = state(store, "r1", T0 + 700)
    assert got.kind == RunStateKind.EXECUTING
    assert got.words.startswith("executing step charge, attempt 2 of 3, since ")


def test_a_full_concurrency_key_names_its_text_slots_and_holders(store: Store) -> None:
    keys = {"concurrency0": {"key": "u4", "hash": KEY, "limit": 1}}
    for run_id in ("holder", "blocked"):
        add_run(store, run_id, keys=keys, lane="L1")
    enqueue(store, "holder", lane="L1", limits=((KEY, 1),))
    store.write(lambda c: q.claim(c, T0, 5, LEASE))
    enqueue(store, "blocked", at=T0 + 1, lane="L1", limits=((KEY, 1),))
    store.write(lambda c: q.claim(c, T0 + 2, 5, LEASE))  # parks the lane on the key
    got = state(store, "blocked", T0 + 3)
    assert got.kind == RunStateKind.CONCURRENCY and got.gate == "concurrency"
    assert got.to_json()["slots"] == [{"key": "u4", "used": 1, "limit": 1, "holders": ["holder"]}]
    assert got.words == (
        "concurrency: due, waiting for a free slot; key 'u4': 1/1 slots in use, held by holder"
    )
    assert state(store, "holder", T0 + 3).kind == RunStateKind.EXECUTING


def test_throttle_and_a_gate_this_model_does_not_know_still_read_well(store: Store) -> None:
    add_run(store, "thr", waiting={"gate": "throttle", "key": "acme", "until_ms": T0 + 9_000})
    enqueue(store, "thr", at=T0 + 9_000)
    got = state(store, "thr", T0)
    assert (got.kind, got.key, got.until) == (RunStateKind.THROTTLE, "acme", T0 + 9_000)
    assert "at 2023-11-14T22:13:29.000+00:00 (key 'acme')" in got.words

    lane = {"gate": "lane", "key": "cust-7", "until_ms": None, "words": "lane: 3 ahead", "ahead": 3}
    add_run(store, "new", waiting=lane)
    enqueue(store, "new", at=T0)
    got = state(store, "new", T0 + 1)
    assert (got.kind, got.gate, got.words) == (RunStateKind.GATE, "lane", "lane: 3 ahead")
    assert (got.key, got.details) == ("cust-7", {"ahead": 3})


def test_open_sleeps_waits_and_invokes_are_the_state_in_parallel_too(store: Store) -> None:
    add_run(store, "r1")
    history(
        store, "r1", HistoryKind.SLEEP, T0, step_id="s", name="nap", detail={"until": T0 + 60_000}
    )
    wait = {"event": "app/ok", "if": "async.data.n == 1", "until": T0 + 90_000}
    history(store, "r1", HistoryKind.WAIT, T0 + 1, step_id="w", name="ok", detail=wait)
    got = state(store, "r1", T0 + 2)
    assert (got.kind, got.step_name, got.until) == (RunStateKind.SLEEPING, "nap", T0 + 60_000)
    [other] = got.also
    assert (other.kind, other.event, other.expression) == (
        RunStateKind.WAITING_FOR_EVENT,
        "app/ok",
        "async.data.n == 1",
    )
    assert other.words.startswith("waiting for event app/ok where async.data.n == 1 until ")

    add_run(store, "parent")
    history(
        store, "parent", HistoryKind.INVOKE, T0, step_id="i", name="ask", detail={"function": "kid"}
    )
    add_run(store, "child", correlation_id="parent.i")
    got = state(store, "parent", T0 + 1)
    assert (got.kind, got.function, got.child_run_id) == (RunStateKind.INVOKING, "kid", "child")
    assert got.words == "invoking function kid: run child, queued (step ask)"


def test_a_page_of_runs_gets_the_same_states_as_each_run_alone(store: Store) -> None:
    test_a_full_concurrency_key_names_its_text_slots_and_holders(store)
    add_run(store, "sleeper")
    history(store, "sleeper", HistoryKind.SLEEP, T0, step_id="s", detail={"until": T0 + 5})
    found = store.read(lambda c: runs.run_listing(c, runs.RunPage(limit=10), T0 + 3, MOST))
    assert {r.id for r in found.runs} == {"holder", "blocked", "sleeper"}
    for r in found.runs:
        assert found.states[r.id] == state(store, r.id, T0 + 3)


def test_an_ended_run_closes_its_open_entries_as_cancelled_at_its_end(store: Store) -> None:
    add_run(store, "r1")
    history(store, "r1", HistoryKind.SLEEP, T0, step_id="s", name="nap", detail={"until": T0 + 9})
    store.write(
        lambda c: run_records.finish(c, "r1", RunStatus.CANCELLED, T0 + 5, {"message": "x"})
    )
    view = store.read(lambda c: runs.run_view(c, "r1", T0 + 60_000, MOST))
    assert view is not None
    [sleep] = view.history
    assert (sleep.status, sleep.ended_at) == (StepStatus.CANCELLED, T0 + 5)
    assert view.state.kind == RunStateKind.ENDED and view.state.error == "x"


def test_the_run_view_names_steps_numbers_attempts_per_step_and_marks_timeouts(
    store: Store,
) -> None:
    add_run(store, "r1")
    fail = {"ops": [{"op": "StepError", "id": "h1", "name": "charge", "error": {"message": "no"}}]}
    history(
        store, "r1", HistoryKind.CALL, T0, ended_at=T0 + 1, status=StepStatus.FAILED, detail=fail
    )
    history(
        store,
        "r1",
        HistoryKind.CALL,
        T0 + 2,
        ended_at=T0 + 3,
        attempt=1,
        status=StepStatus.FAILED,
        detail=fail,
    )
    ok = {"ops": [{"op": "StepRun", "id": "h1", "name": "charge"}]}
    history(store, "r1", HistoryKind.CALL, T0 + 4, ended_at=T0 + 5, attempt=2, detail=ok)
    wait = {"ops": [{"op": "WaitForEvent", "id": "h2", "name": "approval"}]}
    history(store, "r1", HistoryKind.CALL, T0 + 6, ended_at=T0 + 7, detail=wait)
    history(
        store,
        "r1",
        HistoryKind.WAIT,
        T0 + 7,
        ended_at=T0 + 9,
        status=StepStatus.TIMED_OUT,
        step_id="h2",
        name="approval",
        detail={"event": "a/b", "until": T0 + 9},
    )
    store.write(
        lambda c: step_records.save_memo(
            c, "r1", "h1", 0, "charge", "StepRun", '{"data":1}', T0 + 5
        )
    )
    store.write(
        lambda c: step_records.save_memo(c, "r1", "h2", 1, "", "WaitForEvent", "null", T0 + 9)
    )
    view = store.read(lambda c: runs.run_view(c, "r1", T0 + 10, MOST))
    assert view is not None
    assert [s.name for s in view.steps] == ["charge", "approval"]  # the wait's name, not its hash
    assert view.step_status == {"h1": StepStatus.COMPLETED, "h2": StepStatus.TIMED_OUT}
    charge = view.attempts["h1"]
    assert [a.number for a in charge] == [1, 2, 3]
    assert [a.error for a in charge] == [{"message": "no"}, {"message": "no"}, None]


def test_the_effects_of_an_event_name_every_run_it_touched(store: Store) -> None:
    batch = [StoredEvent(f"e{i}", "app/x", None, T0, T0 + i, {"n": i}) for i in range(3)]
    store.write(lambda c: event_records.insert_events(c, batch))
    add_run(store, "started", event_ids=("e0",))
    add_run(store, "batched", event_ids=("e1", "e0"), batch_id="B1", created_at=T0 + 1)
    add_run(store, "waiter")
    record = event_records.record_outcome
    store.write(
        lambda c: record(c, "e0", "fn-1", EventOutcome.RESUMED, "waiter", "resumed", T0 + 5)
    )
    store.write(lambda c: record(c, "e2", "fn-2", EventOutcome.SUPERSEDED, None, "by e0", T0 + 6))
    store.write(lambda c: record(c, "e2", "fn-3", "rolling_window", None, "over 10/s", T0 + 7))
    got = store.read(lambda c: events.event_effects(c, "e0"))
    assert got is not None
    assert [(e.kind, e.run.id if e.run else None) for e in got.effects] == [
        (EventEffect.STARTED, "started"),
        (EventEffect.BATCHED_INTO, "batched"),
        (EventOutcome.RESUMED, "waiter"),
    ]
    other = store.read(lambda c: events.event_effects(c, "e2"))
    assert other is not None
    assert [(e.kind, e.words) for e in other.effects] == [
        (EventOutcome.SUPERSEDED, "by e0"),
        ("rolling_window", "over 10/s"),  # a newer gate's word passes through
    ]
    assert store.read(lambda c: events.event_effects(c, "nope")) is None


def test_a_checkpointed_call_counts_for_the_step_it_stopped_at_or_for_the_function(
    store: Store,
) -> None:
    add_run(store, "r1")
    ran = [{"op": "StepRun", "id": "h0", "name": "before"}]
    failed = [{"op": "StepError", "id": "h1", "name": "flaky", "error": {"message": "no"}}]
    detail: dict[str, Any] = {"ops": ran + failed}
    history(
        store, "r1", HistoryKind.CALL, T0, ended_at=T0 + 1, status=StepStatus.FAILED, detail=detail
    )
    detail = {"result": "completed", "ops": [{"op": "StepRun", "id": "h1", "name": "flaky"}]}
    history(store, "r1", HistoryKind.CALL, T0 + 2, ended_at=T0 + 3, attempt=1, detail=detail)
    add_run(store, "r2")
    error = {"name": "RetryAfterError", "message": "not yet"}
    detail = {"ops": [{"op": "StepRun", "id": "k", "name": "kept"}], "error": error, "status": 0}
    history(
        store, "r2", HistoryKind.CALL, T0, ended_at=T0 + 1, status=StepStatus.FAILED, detail=detail
    )
    view = store.read(lambda c: runs.run_view(c, "r1", T0 + 10, MOST))
    assert view is not None
    assert [(a.number, a.error) for a in view.attempts["h1"]] == [(1, {"message": "no"}), (2, None)]
    assert "h0" not in view.attempts  # ran on the way, in the call that stopped at h1
    other = store.read(lambda c: runs.run_view(c, "r2", T0 + 10, MOST))
    assert other is not None
    assert [(a.number, a.error) for a in other.attempts[""]] == [(1, error)]
    calls = [(b.label, b.note) for b in waterfall(view, T0 + 10) if b.kind == HistoryKind.CALL]
    assert calls == [
        ("Call · before … flaky · attempt 1", "error: Error: no"),
        ("Call · flaky · attempt 2", "function returned"),
    ]
    [(label, note)] = [(b.label, b.note) for b in waterfall(other, T0 + 10) if b.kind == "call"]
    # the function's only call so far: numbered once the function is tried again
    assert (label, note) == ("Call", "error: RetryAfterError: not yet")
