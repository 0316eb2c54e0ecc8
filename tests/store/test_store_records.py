"""Named operations on events, runs, step memos, run keys, history and waits."""

import json
from dataclasses import replace
from functools import partial
from typing import Any

import pytest
from weir.platform.foundation.vocabulary import RunStatus, WaitKind
from weir.platform.store.flow import run_keys
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records
from weir.platform.store.records import waits as wait_records

from tests.support.store_kit import Store

DAY_MS = 24 * 60 * 60 * 1000


def save_memo(
    store: Store, step_id: str, memo: str, *, seq: int = 0, run_id: str = "run-1"
) -> bool:
    return store.write(
        lambda c: step_records.save_memo(c, run_id, step_id, seq, step_id, "step", memo, 100)
    )


def new_run(run_id: str, *event_ids: str) -> run_records.NewRun:
    return run_records.NewRun(
        id=run_id,
        function_id="fn-1",
        event_ids=event_ids or ("ev-1",),
        created_at=10,
        score=10,
        lane="lane-a",
    )


# -- step memos ------------------------------------------------------------------------------


def test_save_memo_stores_a_step_result_once(store: Store) -> None:
    assert save_memo(store, "s1", '{"data":1}') is True
    memos = store.read(lambda c: step_records.list_steps(c, "run-1"))
    assert [(m.step_id, m.memo) for m in memos] == [("s1", {"data": 1})]


def test_save_memo_never_overwrites_a_stored_result(store: Store) -> None:
    assert save_memo(store, "s1", '{"data":"first"}', seq=0) is True
    assert save_memo(store, "s1", '{"data":"second"}', seq=5) is False
    memos = store.read(lambda c: step_records.list_steps(c, "run-1"))
    assert [(m.step_id, m.memo, m.seq) for m in memos] == [("s1", {"data": "first"}, 0)]


def test_memos_are_kept_per_run_and_loaded_in_step_order(store: Store) -> None:
    save_memo(store, "b", '"B"', seq=2)
    save_memo(store, "a", '"A"', seq=1)
    save_memo(store, "a", '"other run"', seq=1, run_id="run-2")
    memos = store.read(lambda c: step_records.list_steps(c, "run-1"))
    assert [(m.step_id, m.memo) for m in memos] == [("a", "A"), ("b", "B")]
    other = store.read(lambda c: step_records.list_steps(c, "run-2"))
    assert [m.memo for m in other] == ["other run"]


def _memos(*ids: str) -> list[step_records.NewMemo]:
    return [step_records.NewMemo(i, f"name-{i}", "StepRun", f'"{i}"') for i in ids]


def test_save_memos_stores_many_in_order_in_one_write(store: Store) -> None:
    ids = [f"s{i}" for i in range(step_records.SAVE_CHUNK + 7)]  # two statements
    saved = store.write(lambda c: step_records.save_memos(c, "run-1", _memos(*ids), 3, 100))
    assert saved == {step_id: 3 + i for i, step_id in enumerate(ids)}
    memos = store.read(lambda c: step_records.list_steps(c, "run-1"))
    assert [(m.step_id, m.seq, m.memo, m.name) for m in memos] == [
        (i, 3 + n, i, f"name-{i}") for n, i in enumerate(ids)
    ]


def test_save_memos_keeps_stored_results_and_skips_their_numbers(store: Store) -> None:
    save_memo(store, "b", '"first"', seq=0)
    saved = store.write(lambda c: step_records.save_memos(c, "run-1", _memos("a", "b", "c"), 1, 9))
    assert saved == {"a": 1, "c": 3}  # "b" kept its result; its number 2 is left unused
    memos = store.read(lambda c: step_records.list_steps(c, "run-1"))
    assert [(m.step_id, m.seq, m.memo) for m in memos] == [
        ("b", 0, "first"),
        ("a", 1, "a"),
        ("c", 3, "c"),
    ]


def test_memo_text_comes_back_byte_for_byte(store: Store) -> None:
    memo = '{"data": {"b": 1, "a": [1.0, "é\\u00e9", null]}}'  # spacing, order, escapes kept
    save_memo(store, "s", memo)
    [(text,)] = store.rows("SELECT memo FROM steps WHERE run_id = :r", r="run-1")
    assert text == memo
    [stored] = store.read(lambda c: step_records.list_steps(c, "run-1"))
    assert stored.memo == json.loads(memo)  # decoded once, in the store


# -- run keys (one run per function per event id within 24 h) --------------------------------


def claim_key(store: Store, run_id: str, now: int, fn: str = "fn-1", key: str = "ev-a") -> Any:
    return store.write(lambda c: run_keys.claim_run_key(c, fn, key, run_id, now, DAY_MS))


def test_the_first_claim_of_a_run_key_wins(store: Store) -> None:
    assert claim_key(store, "run-1", now=1_000) is None
    assert claim_key(store, "run-2", now=2_000) == "run-1"


def test_a_run_key_holds_for_24_hours_exactly(store: Store) -> None:
    t0 = 1_000_000
    assert claim_key(store, "run-1", now=t0) is None
    assert claim_key(store, "run-2", now=t0 + DAY_MS - 1) == "run-1"
    assert claim_key(store, "run-3", now=t0 + DAY_MS) is None  # expired: the new run takes it
    assert claim_key(store, "run-4", now=t0 + DAY_MS + 1) == "run-3"
    assert store.rows("SELECT run_id, expires_at FROM run_keys") == [("run-3", t0 + 2 * DAY_MS)]


def test_run_keys_are_per_function_and_per_key(store: Store) -> None:
    assert claim_key(store, "run-1", now=0, fn="fn-1", key="ev-a") is None
    assert claim_key(store, "run-2", now=0, fn="fn-2", key="ev-a") is None
    assert claim_key(store, "run-3", now=0, fn="fn-1", key="ev-b") is None
    assert claim_key(store, "run-4", now=1, fn="fn-2", key="ev-a") == "run-2"


def test_a_rolled_back_transition_leaves_its_run_key_free(store: Store) -> None:
    def claim_then_fail(conn: Any) -> None:
        run_keys.claim_run_key(conn, "fn-1", "ev-a", "run-1", 0, DAY_MS)
        raise RuntimeError("the rest of the transition failed")

    with pytest.raises(RuntimeError):
        store.write(claim_then_fail)
    assert claim_key(store, "run-2", now=1) is None


# -- events, runs, outcomes ------------------------------------------------------------------


def test_events_are_stored_and_loaded_in_the_order_asked(store: Store) -> None:
    batch = [
        event_records.StoredEvent(f"ev-{i}", "app/thing", None, 1_000 + i, 2_000, {"n": i})
        for i in range(3)
    ]
    store.write(lambda c: event_records.insert_events(c, batch))
    store.write(lambda c: event_records.insert_events(c, []))
    payloads = store.read(lambda c: event_records.load_event_payloads(c, ["ev-2", "ev-0", "ev-9"]))
    assert payloads == [{"n": 2}, {"n": 0}]
    row = store.read(lambda c: event_records.get_event(c, "ev-1"))
    assert (row.name, row.ts, row.received_at) == ("app/thing", 1_001, 2_000)


@pytest.mark.parametrize(
    ("ids", "expected"),
    [(["ev-1"], ['{"n":1}']), (["ev-9"], []), (["ev-2", "ev-9", "ev-0"], ['{"n":2}', '{"n":0}'])],
)
def test_event_texts_come_back_as_stored_in_the_order_asked(
    store: Store, ids: list[str], expected: list[str]
) -> None:
    batch = [
        event_records.StoredEvent(f"ev-{i}", "app/thing", None, 1_000 + i, 2_000, {"n": i})
        for i in range(3)
    ]
    store.write(lambda c: event_records.insert_events(c, batch))
    assert store.read(lambda c: event_records.load_event_texts(c, ids)) == expected


def test_runs_are_found_through_every_event_that_started_them(store: Store) -> None:
    store.write(lambda c: run_records.insert_run(c, new_run("run-b", "ev-1", "ev-2")))
    store.write(lambda c: run_records.insert_run(c, new_run("run-a", "ev-1", "ev-1")))
    by_first = store.read(lambda c: run_records.runs_for_event(c, "ev-1"))
    assert [r.id for r in by_first] == ["run-a", "run-b"]
    by_second = store.read(lambda c: run_records.runs_for_event(c, "ev-2"))
    assert [r.id for r in by_second] == ["run-b"]
    assert store.read(lambda c: run_records.runs_for_event(c, "ev-3")) == []


def test_finishing_a_run_changes_only_the_named_run(store: Store) -> None:
    store.write(lambda c: run_records.insert_run(c, new_run("run-1")))
    store.write(lambda c: run_records.insert_run(c, new_run("run-2")))
    store.write(lambda c: run_records.finish(c, "run-1", RunStatus.COMPLETED, 20, "ok"))
    one = store.read(lambda c: run_records.get_run(c, "run-1"))
    two = store.read(lambda c: run_records.get_run(c, "run-2"))
    assert one is not None and two is not None
    assert (one.status, one.output, one.ended_at, one.keys, one.pending) == (
        RunStatus.COMPLETED,
        "ok",
        20,
        {},
        (),
    )
    assert (two.status, two.output, two.ended, two.event_ids) == ("QUEUED", None, False, ("ev-1",))
    assert store.read(lambda c: run_records.get_run(c, "absent")) is None


def test_several_runs_are_read_at_once_as_each_would_be_alone(store: Store) -> None:
    ids = ["run-1", "run-é\u2028", 'run-"q"', "run-4"]
    for run_id in ids:
        store.write(lambda c, r=run_id: run_records.insert_run(c, new_run(r)))
    store.write(lambda c: run_records.finish(c, "run-4", RunStatus.FAILED, 20, {"e": 1}))
    asked = [*reversed(ids), "absent", "run-1"]  # any order, a missing id, a repeat
    found = store.read(lambda c: run_records.get_runs(c, asked))
    alone = {r: store.read(lambda c, r=r: run_records.get_run(c, r)) for r in ids}
    assert found == alone
    assert store.read(lambda c: run_records.get_runs(c, ["absent"])) == {}
    assert store.read(lambda c: run_records.get_runs(c, ["run-4"])) == {"run-4": alone["run-4"]}


def test_a_run_records_its_progress_through_named_operations(store: Store) -> None:
    store.write(lambda c: run_records.insert_run(c, new_run("run-1")))
    store.write(lambda c: run_records.mark_started(c, "run-1", 11))
    store.write(lambda c: run_records.set_waiting(c, "run-1", {"gate": "retry", "key": "s"}))
    opened = [run_records.PendingStep("a"), run_records.PendingStep("b", race=True)]
    store.write(lambda c: run_records.set_pending(c, "run-1", opened, True))
    run = store.read(lambda c: run_records.get_run(c, "run-1"))
    assert run is not None
    assert (run.status, run.started_at, run.waiting) == (
        "RUNNING",
        11,
        {"gate": "retry", "key": "s"},
    )
    assert (run.pending, run.force_plan) == (tuple(opened), True)
    store.write(
        lambda c: run_records.step_saved(
            c, "run-1", step_count=1, state_bytes=9, pending=opened[1:], force_plan=False
        )
    )
    store.write(lambda c: run_records.set_waiting(c, "run-1", None))
    run = store.read(lambda c: run_records.get_run(c, "run-1"))
    assert run is not None
    assert (run.step_count, run.state_bytes, run.pending, run.force_plan, run.waiting) == (
        1,
        9,
        (opened[1],),
        False,
        None,
    )


def test_a_lane_handed_to_a_waiting_run_gives_it_the_fence_in_one_write(store: Store) -> None:
    lane = {"key": "acme", "hash": "h" * 64}
    waiting = {"kind": "gate", "gate": "lane"}
    held = replace(new_run("run-1"), keys={"lane": lane, "limits": []}, waiting=waiting)
    store.write(lambda c: run_records.insert_run(c, held))
    handed = store.write(lambda c: run_records.lane_handed(c, "run-1", 7))
    stored = store.read(lambda c: run_records.get_run(c, "run-1"))
    assert handed == stored  # the run as the write left it, read in the same statement
    assert stored is not None and stored.waiting is None and stored.status == "QUEUED"
    assert stored.keys == {"lane": {**lane, "fence": 7}, "limits": []}
    assert store.write(lambda c: run_records.lane_handed(c, "run-1", 8)).keys["lane"]["fence"] == 8


def test_a_lane_is_handed_to_a_run_whose_keys_hold_any_text(store: Store) -> None:
    # a key's text may hold any character, NUL included, which PostgreSQL's jsonb refuses
    keys = {"lane": {"key": "a\x00b\u00e9\U0001f600", "hash": "h" * 64}, "throttle": "x\x00y"}
    store.write(lambda c: run_records.insert_run(c, replace(new_run("run-1"), keys=keys)))
    handed = store.write(lambda c: run_records.lane_handed(c, "run-1", 2))
    stored = store.read(lambda c: run_records.get_run(c, "run-1"))
    assert handed is not None and stored is not None and handed.keys == stored.keys
    assert stored.keys == {"lane": {**keys["lane"], "fence": 2}, "throttle": "x\x00y"}


def test_a_lane_is_not_handed_to_an_ended_or_missing_run(store: Store) -> None:
    lane = {"key": "acme", "hash": "h" * 64}
    store.write(lambda c: run_records.insert_run(c, replace(new_run("run-1"), keys={"lane": lane})))
    store.write(lambda c: run_records.finish(c, "run-1", RunStatus.CANCELLED, 20, "stop"))
    assert store.write(lambda c: run_records.lane_handed(c, "run-1", 3)) is None
    ended = store.read(lambda c: run_records.get_run(c, "run-1"))
    assert ended is not None and ended.keys == {"lane": lane}  # unchanged
    assert store.write(lambda c: run_records.lane_handed(c, "absent", 3)) is None


def test_outcomes_are_listed_per_event_in_the_order_recorded(store: Store) -> None:
    for outcome in ("rate_limited", "debounced"):
        store.write(
            partial(
                event_records.record_outcome,
                event_id="ev-1",
                function_id="fn-1",
                outcome=outcome,
                run_id=None,
                detail="why",
                now=5,
            )
        )
    store.write(lambda c: event_records.record_outcome(c, "ev-2", "fn-1", "idempotent", "r", "", 6))
    rows = store.read(lambda c: event_records.outcomes_for_event(c, "ev-1"))
    assert [r.outcome for r in rows] == ["rate_limited", "debounced"]


# -- history and waits -----------------------------------------------------------------------


def test_close_history_ends_only_the_open_entry_of_that_step(store: Store) -> None:
    def add(kind: str, step: str, ended: int | None) -> None:
        store.write(
            lambda c: step_records.add_history(c, "run-1", kind, "RUNNING", 1, ended, step_id=step)
        )

    add("sleep", "s1", None)
    add("sleep", "s1", 2)  # an earlier, already closed entry stays as it was
    add("sleep", "s2", None)
    add("wait", "s1", None)
    store.write(lambda c: step_records.close_history(c, "run-1", "sleep", "s1", "COMPLETED", 9))
    rows = store.read(lambda c: step_records.list_history(c, "run-1"))
    got = [(r.kind, r.step_id, r.status, r.ended_at) for r in rows]
    assert got == [
        ("sleep", "s1", "COMPLETED", 9),
        ("sleep", "s1", "RUNNING", 2),
        ("sleep", "s2", "RUNNING", None),
        ("wait", "s1", "RUNNING", None),
    ]
    assert rows[0].detail == step_records.HistoryDetail()


def test_waits_match_only_events_received_after_they_opened(store: Store) -> None:
    def wait(run_id: str, created_at: int, name: str = "app/go") -> int:
        return store.write(
            lambda c: wait_records.insert_wait(
                c,
                wait_records.NewWait(
                    kind=WaitKind.WAIT,
                    run_id=run_id,
                    step_id="w",
                    event_name=name,
                    created_at=created_at,
                    expires_at=created_at + 1000,
                ),
            )
        )

    first = wait("run-1", 100)
    wait("run-2", 200)
    wait("run-3", 100, name="app/other")
    found = store.read(lambda c: wait_records.waits_for_event(c, "app/go", 150))
    assert [w.run_id for w in found] == ["run-1"]
    assert store.write(lambda c: wait_records.delete_wait(c, first)) is True
    assert store.write(lambda c: wait_records.delete_wait(c, first)) is False
    second = store.read(lambda c: wait_records.get_wait(c, "run-2", "w"))
    assert second is not None
    assert (second.kind, second.step, second.created_at, second.expires_at) == (
        WaitKind.WAIT,
        "w",
        200,
        1200,
    )
    store.write(lambda c: wait_records.delete_run_waits(c, "run-2"))
    assert store.read(lambda c: wait_records.run_waits(c, "run-2")) == []


def test_matching_an_event_passes_over_invoke_waits(store: Store) -> None:
    # An invoke wait shares the name of the event that ends it, but is found by correlation id.
    def wait(run_id: str, kind: WaitKind) -> None:
        new = wait_records.NewWait(
            kind=kind,
            run_id=run_id,
            step_id="w" if kind != WaitKind.CANCEL else None,
            event_name="inngest/function.finished",
            correlation_id=f"{run_id}.w" if kind == WaitKind.INVOKE else None,
            created_at=100,
            expires_at=1100,
        )
        store.write(lambda c: wait_records.insert_wait(c, new))

    for run_id, kind in [("p1", WaitKind.INVOKE), ("w1", WaitKind.WAIT), ("c1", WaitKind.CANCEL)]:
        wait(run_id, kind)
    found = store.read(lambda c: wait_records.waits_for_event(c, "inngest/function.finished", 150))
    assert [(w.run_id, w.kind) for w in found] == [("w1", WaitKind.WAIT), ("c1", WaitKind.CANCEL)]
    invoke = store.read(lambda c: wait_records.wait_by_correlation(c, "p1.w"))
    assert invoke is not None and invoke.kind == WaitKind.INVOKE


# -- sizes the ingest accepts must fit the store ---------------------------------------------


def test_an_event_id_of_any_accepted_length_is_stored(store: Store) -> None:
    user_id = "u" * 2_000  # platform/ingest/validate.py sets no limit on an event's `id`
    event = event_records.StoredEvent("ev-1", "app/x", user_id, 1, 1, {"id": user_id})
    store.write(lambda c: event_records.insert_events(c, [event]))
    assert store.read(lambda c: event_records.get_event(c, "ev-1")).user_id == user_id


def test_a_run_key_built_from_a_long_event_id_is_held(store: Store) -> None:
    key = "event:" + "u" * 2_000  # as runtime/admission.py builds it from the event's `id`
    assert claim_key(store, "run-1", now=0, key=key) is None
    assert claim_key(store, "run-2", now=1, key=key) == "run-1"
