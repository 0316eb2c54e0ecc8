"""FIFO lanes in the store: join, leave and hand off, fences, and commit order between two
producers (two connections, as two processes would have)."""

import threading
import time

from weir.platform.store import fifo
from weir.platform.store import queue as q

from tests.support.store_kit import LEASE, Store, new_item

LANE = "a" * 64


def join(store: Store, run_id: str, lane: str = LANE, start_at: int = 0) -> fifo.Joined:
    payload = {"throttle": {"k": run_id}}
    return store.write(lambda c: fifo.join(c, lane, "acme", run_id, start_at, payload))


def leave(store: Store, run_id: str, lane: str = LANE) -> fifo.Handoff | None:
    return store.write(lambda c: fifo.leave(c, lane, run_id))


def test_the_first_run_holds_a_free_lane_and_the_rest_wait_in_order(store: Store) -> None:
    first = join(store, "r1")
    assert first.holds and first.holder == "r1" and first.fence == 1
    for n in (2, 3, 4):
        later = join(store, f"r{n}", start_at=n)
        assert not later.holds and later.holder == "r1"
    handed = leave(store, "r1")
    assert handed == fifo.Handoff("r2", 2, 2, {"throttle": {"k": "r2"}})
    assert leave(store, "r2") == fifo.Handoff("r3", 3, 3, {"throttle": {"k": "r3"}})
    assert leave(store, "r3") is not None
    assert leave(store, "r4") is None  # the last one: the lane is free
    assert store.read(lambda c: fifo.holder(c, LANE)) is None
    assert store.rows("SELECT count(*) FROM fifo_members") == [(0,)]


def test_a_handoff_keeps_the_lanes_count_in_line_and_dates_the_new_hold(store: Store) -> None:
    for n in (1, 2, 3):
        join(store, f"r{n}")

    def lane_row() -> tuple[object, ...]:
        [row] = store.rows("SELECT holder, fence, queued, held_since FROM fifo_lanes")
        return tuple(row)

    assert store.write(lambda c: fifo.leave(c, LANE, "r1", now=500)) is not None
    assert lane_row() == ("r2", 2, 1, 500)
    assert leave(store, "r3") is None  # left the line: one fewer in it, the hold unchanged
    assert lane_row() == ("r2", 2, 0, 500)
    assert store.write(lambda c: fifo.leave(c, LANE, "r2", now=900)) is None
    assert lane_row() == (None, 2, 0, 500)  # free: the fence stays for the next holder


def test_the_fence_never_goes_back_even_after_the_lane_emptied(store: Store) -> None:
    tokens = []
    for n in range(5):
        joined = join(store, f"r{n}")
        tokens.append(joined.fence)
        assert store.read(lambda c, n=n: fifo.fence(c, LANE, f"r{n}")) == joined.fence
        assert leave(store, f"r{n}") is None
    assert tokens == [1, 2, 3, 4, 5]


def test_a_queued_run_that_leaves_is_skipped_by_the_handoff(store: Store) -> None:
    join(store, "r1")
    join(store, "r2")
    join(store, "r3")
    assert leave(store, "r2") is None  # ended while queued: nothing is handed on
    assert store.read(lambda c: fifo.holder(c, LANE)) == "r1"
    handed = leave(store, "r1")
    assert handed is not None and handed.run_id == "r3" and handed.fence == 2


def test_only_the_holder_has_a_fence(store: Store) -> None:
    join(store, "r1")
    join(store, "r2")
    assert store.read(lambda c: fifo.fence(c, LANE, "r2")) is None
    assert store.read(lambda c: fifo.fence(c, LANE, "r1")) == 1
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
