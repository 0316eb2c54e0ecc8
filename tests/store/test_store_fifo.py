"""FIFO lanes in the store: join, leave and hand off, fences, and commit order between two
producers (two connections, as two processes would have)."""

import threading
import time

from weir.platform.store import queue as q
from weir.platform.store.flow import fifo_lanes as fifo

from tests.support.store_kit import LEASE, Store, new_item

LANE = "a" * 64


def join(store: Store, run_id: str, lane: str = LANE, start_at: int = 0) -> fifo.Joined:
    payload = {"throttle": {"k": run_id}}
    return store.write(lambda c: fifo.join(c, lane, "acme", run_id, start_at, payload))


def leave(store: Store, run_id: str, lane: str = LANE) -> fifo.Handoff | None:
    return store.write(lambda c: fifo.leave(c, lane, run_id))


def handed(handoff: fifo.Handoff | None, run_id: str, start_at: int, above: int) -> int:
    """The fence of a handoff to `run_id`, checked to be above the last holder's."""
    assert handoff is not None
    assert (handoff.run_id, handoff.start_at) == (run_id, start_at)
    assert handoff.payload == {"throttle": {"k": run_id}}
    assert handoff.fence > above
    return handoff.fence


def test_the_first_run_holds_a_free_lane_and_the_rest_wait_in_order(store: Store) -> None:
    first = join(store, "r1")
    assert first.holds and first.holder == "r1" and first.fence is not None
    for n in (2, 3, 4):
        later = join(store, f"r{n}", start_at=n)
        assert not later.holds and later.holder == "r1"
    fence = handed(leave(store, "r1"), "r2", 2, first.fence)
    fence = handed(leave(store, "r2"), "r3", 3, fence)
    handed(leave(store, "r3"), "r4", 4, fence)
    assert leave(store, "r4") is None  # the last one: the lane is free
    assert store.read(lambda c: fifo.holder(c, LANE)) is None
    assert store.rows("SELECT count(*) FROM fifo_members") == [(0,)]


def lane_row(store: Store) -> tuple[object, ...] | None:
    found = store.rows("SELECT holder, fence, queued, held_since FROM fifo_lanes")
    return tuple(found[0]) if found else None


def test_a_handoff_keeps_the_lanes_count_in_line_and_dates_the_new_hold(store: Store) -> None:
    first = join(store, "r1").fence
    for n in (2, 3):
        join(store, f"r{n}")
    handoff = store.write(lambda c: fifo.leave(c, LANE, "r1", now=500))
    assert handoff is not None and first is not None and handoff.fence > first
    assert lane_row(store) == ("r2", handoff.fence, 1, 500)
    assert leave(store, "r3") is None  # left the line: one fewer in it, the hold unchanged
    assert lane_row(store) == ("r2", handoff.fence, 0, 500)


def test_a_free_lane_keeps_no_row_and_its_next_holder_a_higher_fence(store: Store) -> None:
    """A lane's row lives while the lane is busy; taken again, the lane's fence still only
    goes up (the store-wide counter: `fifo.LANE_COUNTER` or the PostgreSQL sequence)."""
    tokens = []
    for n in range(5):
        joined = join(store, f"r{n}")
        assert joined.fence is not None
        tokens.append(joined.fence)
        assert store.read(lambda c, n=n: fifo.fence(c, LANE, f"r{n}")) == joined.fence
        if n % 2:  # a handoff within the busy spell, then the lane empties
            join(store, f"q{n}")
            tokens.append(handed(leave(store, f"r{n}"), f"q{n}", 0, joined.fence))
            assert leave(store, f"q{n}") is None
        else:
            assert leave(store, f"r{n}") is None
        assert lane_row(store) is None
    assert tokens == sorted(set(tokens))


def test_other_lanes_raise_no_fence_of_a_lane_and_lower_none(store: Store) -> None:
    """Fences are per lane: a lane freed with a lower fence than the counter leaves the
    counter as it was (the next lane taken still gets more than any freed before)."""
    busy = join(store, "long", lane="c" * 64).fence
    assert busy is not None
    for n in range(3):  # the lane LANE goes through holders while the other stays busy
        join(store, f"r{n}")
        join(store, f"s{n}")
        leave(store, f"r{n}")
        leave(store, f"s{n}")
    last = join(store, "again").fence
    assert last is not None and last > busy
    assert leave(store, "again") is None
    assert leave(store, "long", lane="c" * 64) is None  # freed with the lower fence
    assert (join(store, "late", lane="c" * 64).fence or 0) > busy
    assert (join(store, "after", lane=LANE).fence or 0) > last


def test_a_queued_run_that_leaves_is_skipped_by_the_handoff(store: Store) -> None:
    join(store, "r1")
    join(store, "r2")
    join(store, "r3")
    assert leave(store, "r2") is None  # ended while queued: nothing is handed on
    assert store.read(lambda c: fifo.holder(c, LANE)) == "r1"
    first = store.read(lambda c: fifo.fence(c, LANE, "r1"))
    handed(leave(store, "r1"), "r3", 0, first)


def test_only_the_holder_has_a_fence(store: Store) -> None:
    fence = join(store, "r1").fence
    join(store, "r2")
    assert store.read(lambda c: fifo.fence(c, LANE, "r2")) is None
    assert store.read(lambda c: fifo.fence(c, LANE, "r1")) == fence
    assert fifo.run_fences({"lane": {"key": "acme", "hash": LANE, "fence": 1}}) == {"lane": 1}
    assert fifo.run_fences({"lane": {"key": "acme", "hash": LANE}}) == {}  # still in line
    assert fifo.run_fences({}) == {}


def test_lanes_are_independent(store: Store) -> None:
    other = "b" * 64
    assert join(store, "r1").holds
    assert join(store, "x1", lane=other).holds
    assert not join(store, "r2").holds
    assert leave(store, "x1", lane=other) is None
    assert store.read(lambda c: fifo.holder(c, LANE)) == "r1"


def test_two_producers_cannot_interleave_a_lane_order_is_commit_order(store: Store) -> None:
    """Producer A joins first but commits late; producer B, joining meanwhile, waits for A's
    commit and comes after it: the line follows commit order on either backend."""
    join(store, "holder")
    a_joined = threading.Event()
    b_done = threading.Event()
    errors: list[BaseException] = []

    def producer_a() -> None:
        try:
            with store.engine.begin() as conn:
                fifo.join(conn, LANE, "acme", "a", 0, {})
                a_joined.set()
                time.sleep(0.5)  # B starts meanwhile and must wait for this commit
                assert not b_done.is_set(), "B joined before A committed"
        except BaseException as exc:  # reported below: a thread's assert is otherwise lost
            errors.append(exc)

    def producer_b() -> None:
        try:
            a_joined.wait(5)
            with store.engine.begin() as conn:
                fifo.join(conn, LANE, "acme", "b", 0, {})
            b_done.set()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=producer_a), threading.Thread(target=producer_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    assert errors == []
    assert b_done.is_set()
    first = leave(store, "holder")
    assert first is not None and first.run_id == "a"
    second = leave(store, "a")
    assert second is not None and second.run_id == "b"


# -- fencing tokens of concurrency keys with limit 1 -----------------------------------------

K1, K2 = "k1" * 16, "k2" * 16


def test_each_claim_under_a_limit_1_key_takes_the_next_token(store: Store) -> None:
    lane_items = [new_item("L1", limits=((K1, 1), (K2, 2)), score=i) for i in range(3)]
    for item in lane_items:
        store.write(lambda c, item=item: q.enqueue(c, item))
    tokens = []
    for now in (1, 2, 3):
        (claimed,) = store.write(lambda c, now=now: q.claim(c, now, 10, LEASE))
        assert set(claimed.fences) == {K1}  # the limit-2 key has no token
        tokens.append(claimed.fences[K1])
        store.write(lambda c, claimed=claimed, now=now: q.finish(c, claimed, now))
    assert tokens == [1, 2, 3]


def test_a_call_claimed_again_after_its_lease_ran_out_gets_a_higher_token(store: Store) -> None:
    store.write(lambda c: q.enqueue(c, new_item("L1", limits=((K1, 1),))))
    (first,) = store.write(lambda c: q.claim(c, 0, 10, LEASE))
    (again,) = store.write(lambda c: q.claim(c, LEASE + 1, 10, LEASE))  # the holder died
    assert again.id == first.id
    assert again.fences[K1] > first.fences[K1]


def test_items_without_a_limit_1_key_take_no_token(store: Store) -> None:
    store.write(lambda c: q.enqueue(c, new_item("L2", limits=((K2, 2),))))
    store.write(lambda c: q.enqueue(c, new_item("L3")))
    claimed = store.write(lambda c: q.claim(c, 0, 10, LEASE))
    assert len(claimed) == 2 and all(item.fences == {} for item in claimed)
    assert store.rows("SELECT count(*) FROM fences") == [(0,)]
