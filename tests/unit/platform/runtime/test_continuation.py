"""Work taken by the transaction that makes it due, on SQLite and PostgreSQL: the worker that
made a call goes on to the next call made where the answer is applied (the next run of a FIFO
lane, handed over by the run that ended there: no claim in between, no scheduler woken for
it), and takes no other due item itself; an event's first calls are claimed where the event is
accepted."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Connection, text
from weir.platform.executor.response import Completed, Op, Ops, Timing
from weir.platform.foundation.vocabulary import Opcode
from weir.platform.functions import ConcurrencyLimit, Lane
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.runtime import continuation, events, runs
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.flow import fifo_lanes as fifo
from weir.platform.store.queue import Claimed
from weir.platform.store.records import runs as run_records

from tests.support.flow_harness import EVENT, LEASE_MS, NOON, Harness, config

LATER = NOON + 5_000


def claim_one(h: Harness, at: int) -> Claimed:
    with h.engine.begin() as conn:
        (item,) = q.claim(conn, at, 1, LEASE_MS)
    return item


def answer(
    h: Harness, item: Claimed, at: int, *, take_next: bool = True
) -> tuple[Claimed | None, int]:
    """Apply a final answer to `item` as the platform does; what the worker takes next and
    how many items the transaction left for the scheduler to wake for."""
    fn = h.registry.by_id[item.function_id or ""]
    with h.tx(at) as tx:
        nxt = continuation.apply_answer(
            tx, item, fn, Completed(None), Timing(at, at), lease_ms=LEASE_MS, take_next=take_next
        )
        return nxt, tx.enqueued


def test_a_lane_hands_its_next_run_to_the_worker_that_ended_the_last(database_url: str) -> None:
    h = Harness(database_url, config(lane=Lane(key="event.data.c", name=None)))
    h.burst(NOON, [{"c": "acme", "i": i} for i in range(3)])
    first, second, third = h.runs()
    item = claim_one(h, NOON)
    assert item.run_id == first.id
    nxt, wake_for = answer(h, item, LATER)
    assert nxt is not None and nxt.run_id == second.id
    assert nxt.claimed_at == LATER  # leased by the same transaction
    assert wake_for == 0  # the scheduler has nothing to look at
    assert h.run(first.id).status == "COMPLETED"
    assert h.run(second.id).keys["lane"]["fence"] == h.run(first.id).keys["lane"]["fence"] + 1
    nxt2, _ = answer(h, nxt, LATER + 1)
    assert nxt2 is not None and nxt2.run_id == third.id
    last, wake_for = answer(h, nxt2, LATER + 2)
    assert last is None and wake_for == 0
    assert h.queued("exec") == []


def counted_claims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The time of every claim made from now on."""
    claims: list[int] = []
    real = q.claim

    def counted(conn: Connection, now: int, *args: Any, **kwargs: Any) -> list[Claimed]:
        claims.append(now)
        return real(conn, now, *args, **kwargs)

    monkeypatch.setattr(q, "claim", counted)
    return claims


def test_the_handover_takes_no_claim(database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    claims = counted_claims(monkeypatch)
    h = Harness(database_url, config("laned", lane=Lane(key="event.data.c", name=None)))
    h.burst(NOON, [{"c": "acme"}, {"c": "acme"}])
    second = h.runs()[1]
    nxt, _ = answer(h, claim_one(h, NOON), LATER)
    assert nxt is not None and nxt.run_id == second.id
    assert claims == [NOON]  # claim_one's: the next holder was leased where it was queued


def test_a_stopping_worker_leaves_the_handed_over_run_to_the_scheduler(database_url: str) -> None:
    h = Harness(database_url, config(lane=Lane(key="event.data.c", name=None)))
    h.burst(NOON, [{"c": "acme", "i": i} for i in range(2)])
    first, second = h.runs()
    nxt, wake_for = answer(h, claim_one(h, NOON), LATER, take_next=False)
    assert nxt is None
    assert wake_for == 1  # queued for whoever claims next
    assert [row.run_id for row in h.queued("exec")] == [second.id]
    assert h.run(first.id).status == "COMPLETED"


def test_with_older_work_due_the_worker_takes_nothing_and_the_scheduler_claims_it_first(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    laned = config("laned", lane=Lane(key="event.data.c", name=None))
    h = Harness(database_url, laned, config("other"))
    h.burst(NOON, [{"c": "acme"}, {"c": "acme"}])  # both functions: two runs each
    runs = {r.id: r for r in h.runs()}
    holder = claim_one(h, NOON)
    assert runs[holder.run_id or ""].function_id == "laned"
    claims = counted_claims(monkeypatch)
    nxt, wake_for = answer(h, holder, LATER)
    assert nxt is None  # the lane's next run does not go before the older items
    assert claims == []  # nor does the worker claim those: one claim serves all freed workers
    assert wake_for == 1  # the lane's next run is queued; the scheduler is woken
    with h.engine.begin() as conn:
        claimed = q.claim(conn, LATER, 10, LEASE_MS)
    order = [runs[item.run_id or ""].function_id for item in claimed]
    assert order == ["other", "other", "laned"]  # queued at NOON, before the handoff


def accept(h: Harness, datas: list[dict[str, object]], size: int) -> tuple[list[Claimed], int]:
    """Accept events as the platform does, claiming up to `size` of what they make due in the
    same transaction; the claimed items and what is left for the scheduler to wake for."""
    incoming = [IncomingEvent(EVENT, d, None, LATER, {}, None) for d in datas]
    with h.tx(LATER) as tx:
        events.accept(tx, incoming)
        return continuation.take_due(tx, LATER, size, LEASE_MS), tx.enqueued


def test_an_events_first_calls_are_claimed_where_it_is_accepted(database_url: str) -> None:
    h = Harness(database_url, config())
    claimed, wake_for = accept(h, [{"i": 1}, {"i": 2}], size=8)
    assert sorted(i.run_id or "" for i in claimed) == sorted(r.id for r in h.runs())
    assert {i.claimed_at for i in claimed} == {LATER}
    assert wake_for == 0  # nothing left for the scheduler
    assert all(row.lease_owner for row in h.queued("exec"))


def test_what_the_room_does_not_cover_is_left_for_the_scheduler(database_url: str) -> None:
    h = Harness(database_url, config())
    claimed, wake_for = accept(h, [{"i": i} for i in range(3)], size=1)
    assert len(claimed) == 1
    assert wake_for == 3  # two first calls still queued: the scheduler is woken
    assert sum(1 for row in h.queued("exec") if row.lease_owner is None) == 2


def test_an_event_that_starts_nothing_claims_nothing(database_url: str) -> None:
    h = Harness(database_url, config())
    incoming = [IncomingEvent("app/other", {}, None, LATER, {}, None)]
    with h.tx(LATER) as tx:
        events.accept(tx, incoming)
        assert continuation.take_due(tx, LATER, 8, LEASE_MS) == []


def test_first_calls_are_dated_when_claimed_not_when_the_transaction_began(
    database_url: str,
) -> None:
    """A transaction that waited for a lock (a lane's ending holder in another process) claims
    at the time read after the wait: a start is never dated before the end it waited for."""
    h = Harness(database_url, config())
    incoming = [IncomingEvent(EVENT, {}, None, LATER, {}, None)]
    with h.tx(LATER) as tx:
        events.accept(tx, incoming)
        [item] = continuation.take_due(tx, LATER + 50, 8, LEASE_MS)
    assert item.claimed_at == LATER + 50
    assert h.run(item.run_id or "").created_at == LATER


def step_answer(h: Harness, item: Claimed, at: int, *ops: Op) -> tuple[Claimed | None, bool]:
    """Apply `ops` to `item`; the run's next call, and whether the run this transaction kept
    for that call's state is the row as stored at the end of the transaction."""
    fn = h.registry.by_id[item.function_id or ""]
    with h.tx(at) as tx:
        nxt = continuation.apply_answer(
            tx, item, fn, Ops(list(ops)), Timing(at, at), lease_ms=LEASE_MS
        )
        kept = tx.next_call.run
        same = kept is not None and kept == run_records.get_run(tx.conn, item.run_id or "")
        return nxt, same


def step_run(step_id: str, data: object) -> Op:
    return Op(Opcode.STEP_RUN, step_id, step_id, step_id, {}, data, None)


def test_a_saved_step_hands_the_next_call_the_run_as_stored(database_url: str) -> None:
    h = Harness(database_url, config())
    h.burst(NOON, [{"i": 1}])
    item = claim_one(h, NOON)
    nxt, same = step_answer(h, item, LATER, step_run("a", {"n": 1}))
    assert nxt is not None and nxt.run_id == item.run_id and same
    nxt, same = step_answer(h, nxt, LATER + 1, step_run("b", "x" * 50))
    assert nxt is not None and same
    assert h.run(nxt.run_id or "").step_count == 2
    # two ops in one answer: a later one may change the run again, so none is kept
    nxt, same = step_answer(h, nxt, LATER + 2, step_run("c", 1), step_run("d", 2))
    assert nxt is not None and not same


def queue_rows(h: Harness) -> list[tuple[Any, ...]]:
    with h.engine.connect() as conn:
        rows = conn.execute(text("SELECT id, step_id, lease_owner FROM queue ORDER BY id"))
        return [tuple(r) for r in rows]


def planned(step_id: str) -> Op:
    return Op(Opcode.STEP_PLANNED, step_id, step_id, step_id, {}, None, None)


def test_a_step_s_result_hands_the_next_call_its_row(database_url: str) -> None:
    h = Harness(database_url, config())
    h.burst(NOON, [{"i": 1}, {"i": 2}])  # the second run's item: a new row's id would differ
    item = claim_one(h, NOON)
    (other,) = [r for r in queue_rows(h) if r[0] != item.id]
    nxt, _ = step_answer(h, item, LATER, step_run("a", 1))
    assert nxt is not None and nxt.id == item.id and nxt.token != item.token
    assert (item.series, nxt.series) == (0, 1)  # another job id: `<id>.1`
    assert queue_rows(h) == sorted([(item.id, "step", nxt.token), other])  # the new lease on it
    with pytest.raises(q.LeaseLost):  # the call answered holds nothing any more
        step_answer(h, item, LATER + 1, step_run("b", 2))
    last, _ = step_answer(h, nxt, LATER + 2, step_run("b", 2))
    assert last is not None and last.id == item.id and last.series == 2
    assert h.run(item.run_id or "").step_count == 2


def two_planned(database_url: str) -> tuple[Harness, Claimed, Claimed]:
    """A run whose first call planned steps "a" and "b": the harness, that call, and "a"'s
    call, claimed for the same worker. The answer's row ended, and each step got a row of its
    own (SQLite may give one the id the answered call had: ids are not kept once gone)."""
    h = Harness(database_url, config())
    h.burst(NOON, [{"i": 1}])
    item = claim_one(h, NOON)
    nxt, _ = step_answer(h, item, LATER, planned("a"), planned("b"))
    assert nxt is not None and nxt.step_id == "a"
    assert [r[1:] for r in queue_rows(h)] == [("a", nxt.token), ("b", None)]
    return h, item, nxt


def test_a_call_whose_run_goes_on_elsewhere_leaves_no_row(database_url: str) -> None:
    h, _, nxt = two_planned(database_url)
    # "a" answers while "b" is open: there is no next call, so the answer's row ends too
    after, _ = step_answer(h, nxt, LATER + 1, step_run("a", 1))
    assert after is None
    assert [r[1:] for r in queue_rows(h)] == [("b", None)]


def test_a_stale_answer_whose_run_goes_on_elsewhere_is_refused(database_url: str) -> None:
    h, item, nxt = two_planned(database_url)
    expired = LATER + LEASE_MS + 1
    taken = claim_one(h, expired)  # "a"'s lease ran out: another worker has it now
    assert (taken.id, taken.step_id) == (nxt.id, "a")
    with pytest.raises(q.LeaseLost):  # "b" still open: the row would end, but is not ours
        step_answer(h, nxt, expired + 1, step_run("a", 1))
    assert h.run(item.run_id or "").step_count == 0  # nothing of the stale answer stays
    assert [r[1:] for r in queue_rows(h)] == [("a", taken.token), ("b", None)]


@contextmanager
def handing_over(database_url: str) -> Iterator[tuple[Tx, Claimed]]:
    """Inside the transaction in which a lane's holder ended and its worker took the lane's
    next run: that transaction, and the next run's call."""
    h = Harness(database_url, config(lane=Lane(key="event.data.c", name=None)))
    h.burst(NOON, [{"c": "acme", "i": i} for i in range(2)])
    item = claim_one(h, NOON)
    fn = h.registry.by_id[item.function_id or ""]
    with h.tx(LATER) as tx:
        nxt = continuation.apply_answer(
            tx, item, fn, Completed(None), Timing(LATER, LATER), lease_ms=LEASE_MS
        )
        assert nxt is not None and nxt.run_id != item.run_id
        yield tx, nxt


def test_a_lane_hands_the_next_runs_first_call_that_run_as_stored(database_url: str) -> None:
    with handing_over(database_url) as (tx, nxt):
        kept = tx.next_call.run
        assert kept is not None and kept == run_records.get_run(tx.conn, nxt.run_id or "")
        lane = kept.keys["lane"]
        assert lane["fence"] == fifo.fence(tx.conn, lane["hash"], kept.id) and kept.waiting is None
        assert lane["fence"] >= 2  # above the first holder's (fences are compared, not counted)


def test_a_run_ended_after_its_next_call_was_claimed_is_read_afresh(database_url: str) -> None:
    with handing_over(database_url) as (tx, nxt):
        assert tx.next_call.run is not None
        # e.g. cancelled by the finished event of the run before it, in the same transaction
        runs.cancel_run(tx, nxt.run_id or "", "cancelled in the same transaction")
        assert tx.next_call.run is None  # its call's state reads the run, and sees it ended


def hot_key(database_url: str, runs: int) -> Harness:
    limit = ConcurrencyLimit(limit=1, key="event.data.k", scope="fn")
    h = Harness(database_url, config(concurrency=(limit,)))
    h.burst(NOON, [{"k": "hot", "i": i} for i in range(runs)])
    return h


def test_a_hot_key_s_slot_goes_to_its_next_run_with_no_claim(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    h = hot_key(database_url, 3)
    first, second, third = h.runs()
    holder = claim_one(h, NOON)
    assert holder.run_id == first.id
    claims = counted_claims(monkeypatch)
    nxt, wake_for = answer(h, holder, LATER)
    assert nxt is not None and nxt.run_id == second.id and nxt.claimed_at == LATER
    assert claims == []  # the slot went straight to the next run
    assert wake_for == 0
    assert nxt.fences[nxt.keys[0]] == holder.fences[holder.keys[0]] + 1
    assert h.run(first.id).status == "COMPLETED"
    last, _ = answer(h, nxt, LATER + 1)
    assert last is not None and last.run_id == third.id
    assert answer(h, last, LATER + 2)[0] is None
    assert h.queued("exec") == []


def test_a_stopping_worker_frees_its_slot_for_the_scheduler(database_url: str) -> None:
    h = hot_key(database_url, 2)
    second = h.runs()[1]
    nxt, _ = answer(h, claim_one(h, NOON), LATER, take_next=False)
    assert nxt is None
    with h.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM slots")).scalar() == 0
    assert claim_one(h, LATER).run_id == second.id


def test_a_lane_of_an_app_at_its_call_cap_frees_its_slot_for_the_claim(database_url: str) -> None:
    h = hot_key(database_url, 2)
    holder = claim_one(h, NOON)
    fn = h.registry.by_id[holder.function_id or ""]
    with h.tx(LATER) as tx:
        nxt = continuation.apply_answer(
            tx,
            holder,
            fn,
            Completed(None),
            Timing(LATER, LATER),
            lease_ms=LEASE_MS,
            skip={fn.id},
        )
    assert nxt is None  # its app is called as much as it may be: nothing of its functions taken
    with h.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM slots")).scalar() == 0
    assert claim_one(h, LATER).run_id == h.runs()[1].id
