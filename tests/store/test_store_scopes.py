"""Concurrency scopes in the queue: a slot of every key or of none, the stored capacity over
the declared limit, and live changes of it (raise wakes parked lanes, lower revokes nothing)."""

from functools import partial

import pytest
from weir.platform.foundation.vocabulary import CapacityAction, CapacityKind
from weir.platform.store import queue as q
from weir.platform.store.flow import capacity
from weir.platform.store.views import stats

from tests.support.store_kit import LEASE, Store, new_item

PRINTER, PAPER = "p1" * 16, "p2" * 16  # key hashes
CAP_PRINTER, CAP_PAPER = "c1" * 16, "c2" * 16  # capacity ids
KIND = CapacityKind.CONCURRENCY


def printer(limit: int = 1) -> q.SlotLimit:
    return q.SlotLimit(PRINTER, limit, CAP_PRINTER)


def paper(limit: int = 2) -> q.SlotLimit:
    return q.SlotLimit(PAPER, limit, CAP_PAPER)


def enqueue(store: Store, *items: q.NewItem) -> None:
    for item in items:
        store.write(partial(q.enqueue, item=item))


def claim(store: Store, now: int, max_items: int = 10) -> list[q.Claimed]:
    return store.write(lambda c: q.claim(c, now, max_items, LEASE))


def finish(store: Store, item: q.Claimed, now: int) -> None:
    store.write(lambda c: q.finish(c, item, now))


def in_use(store: Store, key: str, now: int) -> int:
    return store.read(lambda c: q.in_use(c, key, now))


def declare(store: Store, cap_id: str, name: str, declared: int, now: int = 0) -> None:
    store.write(lambda c: capacity.declare(c, KIND, cap_id, name, declared, now))


def set_size(
    store: Store, cap_id: str, size: int | None, revision: int, now: int = 0
) -> capacity.Capacity | None:
    return store.write(
        lambda c: capacity.set_capacity(c, KIND, cap_id, size, revision, "alice", now)
    )


def get(store: Store, cap_id: str) -> capacity.Capacity:
    found = store.read(lambda c: capacity.find(c, KIND, cap_id))
    assert found is not None
    return found


def test_a_run_waiting_for_one_scope_holds_no_slot_of_the_other(store: Store) -> None:
    enqueue(store, new_item("only-printer", score=0, limits=(printer(),)))
    [holder] = claim(store, now=0)
    enqueue(store, new_item("both", score=1, limits=(printer(), paper())))
    enqueue(store, *(new_item("only-paper", score=2 + i, limits=(paper(),)) for i in range(3)))
    got = claim(store, now=1)
    assert sorted(c.lane for c in got) == ["only-paper", "only-paper"]
    assert in_use(store, PAPER, 1) == 2 and in_use(store, PRINTER, 1) == 1
    parked = store.rows("SELECT blocked_on FROM lanes WHERE lane = 'both'")
    assert parked == [(PRINTER,)]
    finish(store, holder, now=2)
    for item in got:
        finish(store, item, now=2)
    [both] = [c for c in claim(store, now=3) if c.lane == "both"]
    assert set(both.keys) == {PRINTER, PAPER}  # both slots at once


def test_a_claim_that_fills_a_key_parks_the_lane_at_once(store: Store) -> None:
    enqueue(store, *(new_item("hot", score=i, limits=(printer(),)) for i in range(3)))
    [first] = claim(store, now=0)
    assert store.rows("SELECT next_at, blocked_on FROM lanes") == [(LEASE, PRINTER)]
    assert claim(store, now=1) == []  # nothing scanned: the lane is not due
    finish(store, first, now=2)
    [second] = claim(store, now=2)
    assert second.id == first.id + 1


def test_the_stored_capacity_overrides_the_declared_limit(store: Store) -> None:
    declare(store, CAP_PAPER, "scope paper", 2)
    set_size(store, CAP_PAPER, 3, revision=1)
    enqueue(store, *(new_item("p", score=i, limits=(paper(2),)) for i in range(5)))
    assert len(claim(store, now=0)) == 3


def test_code_declaring_another_value_never_overwrites_the_capacity(store: Store) -> None:
    declare(store, CAP_PAPER, "scope paper", 2, now=1)
    created = get(store, CAP_PAPER)
    assert (created.capacity, created.declared, created.revision, created.drift) == (2, 2, 1, False)
    declare(store, CAP_PAPER, "scope paper", 2, now=2)  # the same declaration: no change
    assert get(store, CAP_PAPER).revision == 1
    declare(store, CAP_PAPER, "scope paper", 5, now=3)
    moved = get(store, CAP_PAPER)
    assert (moved.capacity, moved.declared, moved.revision, moved.drift) == (2, 5, 2, True)
    enqueue(store, *(new_item("p", score=i, limits=(paper(5),)) for i in range(5)))
    assert len(claim(store, now=4)) == 2  # the stored 2, not the declared 5
    actions = [c.action for c in store.read(lambda c: capacity.changes(c, KIND, CAP_PAPER))]
    assert actions == [CapacityAction.DECLARED, CapacityAction.CREATED]


def test_set_needs_the_current_revision_and_records_the_actor(store: Store) -> None:
    declare(store, CAP_PAPER, "scope paper", 2)
    with pytest.raises(capacity.RevisionConflict) as conflict:
        set_size(store, CAP_PAPER, 4, revision=7)
    assert conflict.value.current.revision == 1
    assert get(store, CAP_PAPER).capacity == 2  # nothing changed
    done = set_size(store, CAP_PAPER, 4, revision=1, now=9)
    assert done is not None and (done.capacity, done.revision, done.updated_by) == (4, 2, "alice")
    [last, _] = store.read(lambda c: capacity.changes(c, KIND, CAP_PAPER))
    assert (last.action, last.old, last.new, last.actor, last.at) == ("set", 2, 4, "alice", 9)
    with pytest.raises(capacity.RevisionConflict):
        set_size(store, CAP_PAPER, 5, revision=1)  # a stale writer loses
    assert set_size(store, "nope" * 8, 5, revision=1) is None


def test_reset_goes_back_to_the_declared_value_and_ends_the_drift(store: Store) -> None:
    declare(store, CAP_PAPER, "scope paper", 2)
    declare(store, CAP_PAPER, "scope paper", 6)
    assert get(store, CAP_PAPER).drift
    done = set_size(store, CAP_PAPER, None, revision=2)
    assert done is not None and (done.capacity, done.drift, done.revision) == (6, False, 3)


def test_lowering_revokes_nothing_and_new_claims_wait(store: Store) -> None:
    declare(store, CAP_PAPER, "scope paper", 3)
    enqueue(store, *(new_item("p", score=i, limits=(paper(3),)) for i in range(6)))
    held = claim(store, now=0)
    assert len(held) == 3
    set_size(store, CAP_PAPER, 1, revision=1, now=1)
    assert in_use(store, PAPER, 1) == 3  # running work keeps its slots
    finish(store, held[0], now=2)
    assert claim(store, now=2) == []  # 2 in use, capacity 1
    finish(store, held[1], now=3)
    assert claim(store, now=3) == []  # 1 in use
    finish(store, held[2], now=4)
    assert len(claim(store, now=4)) == 1


def test_raising_a_capacity_wakes_the_lanes_parked_on_it(store: Store) -> None:
    declare(store, CAP_PRINTER, "scope printer", 1)
    enqueue(store, *(new_item("p", score=i, limits=(printer(),)) for i in range(3)))
    [held] = claim(store, now=0)
    assert claim(store, now=1) == []
    set_size(store, CAP_PRINTER, 3, revision=1, now=2)
    assert store.rows("SELECT blocked_on, next_at FROM lanes") == [(None, 2)]
    assert len(claim(store, now=2)) == 2
    assert in_use(store, PRINTER, 2) == 3
    finish(store, held, now=3)


def test_a_crashed_holder_s_slot_frees_when_its_lease_runs_out(store: Store) -> None:
    enqueue(store, *(new_item("p", score=i, limits=(printer(), paper())) for i in range(2)))
    [crashed] = claim(store, now=0)  # its process dies: nobody finishes or extends it
    assert claim(store, now=LEASE - 1) == []
    [again] = claim(store, now=LEASE)  # the lease ran out: its item is claimable again
    assert again.id == crashed.id and in_use(store, PRINTER, LEASE) == 1
    with pytest.raises(q.LeaseLost):
        finish(store, crashed, now=LEASE + 1)


def test_runs_in_a_parked_lane_count_as_waiting_for_concurrency(store: Store) -> None:
    items = (new_item("p", score=i, run_id=f"run-{i}", limits=(printer(),)) for i in range(3))
    enqueue(store, *items)
    claim(store, now=0)  # run-0 holds the printer; the lane parks
    waiting = store.read(lambda c: stats.snapshot(c, 1)).waiting
    assert waiting == {"concurrency": 2}
