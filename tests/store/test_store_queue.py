"""The durable queue's named operations: enqueue, claim, finish, retry, extend, leases, lanes."""

import json
import random
import threading
from collections import Counter
from dataclasses import replace
from functools import partial
from typing import Any

import pytest
from sqlalchemy import Connection, bindparam, text
from weir.platform.store import queue as q
from weir.platform.store.database import Database, make_engine

from tests.support.store_kit import LEASE, Store, new_item

K1, K2, K3 = "k1" * 16, "k2" * 16, "k3" * 16  # key hashes


def enqueue(store: Store, *items: q.NewItem) -> list[int | None]:
    return [store.write(partial(q.enqueue, item=it)) for it in items]


def claim(store: Store, now: int, max_items: int = 10, lease: int = LEASE) -> list[q.Claimed]:
    return store.write(lambda c: q.claim(c, now, max_items, lease))


def finish(store: Store, item: q.Claimed, now: int) -> None:
    store.write(lambda c: q.finish(c, item, now))


def lane_row(store: Store, lane: str) -> tuple[Any, ...] | None:
    rows = store.rows(
        "SELECT next_at, head_score, blocked_on FROM lanes WHERE lane = :lane", lane=lane
    )
    return rows[0] if rows else None


def due_lanes(store: Store, now: int) -> list[str]:
    """Exactly the lanes the claimer reads at `now`."""
    rows = store.rows("SELECT lane FROM lanes WHERE next_at <= :now ORDER BY lane", now=now)
    return [str(r[0]) for r in rows]


def in_use(store: Store, key: str, now: int) -> int:
    return store.read(lambda c: q.in_use(c, key, now))


def queue_count(store: Store) -> int:
    return int(store.rows("SELECT count(*) FROM queue")[0][0])


# -- enqueue ---------------------------------------------------------------------------------


def test_claim_returns_the_item_as_enqueued_with_a_fresh_token(store: Store) -> None:
    [item_id] = enqueue(
        store,
        new_item("lane-a", score=7, run_id="run-1", step_id="s1", payload={"a": [1, "x"]}),
    )
    [got] = claim(store, now=5)
    assert got.id == item_id
    assert (got.kind, got.run_id, got.function_id, got.step_id) == ("exec", "run-1", "fn-1", "s1")
    assert got.payload == {"a": [1, "x"]}
    assert (got.attempt, got.lane, got.claimed_at, got.keys) == (0, "lane-a", 5, ())
    assert got.token


def test_enqueue_with_a_queued_dedupe_text_adds_nothing(store: Store) -> None:
    first, second = enqueue(
        store, new_item(dedupe="tick-1", score=1), new_item(dedupe="tick-1", score=2)
    )
    assert first is not None
    assert second is None
    assert queue_count(store) == 1
    assert enqueue(store, new_item(dedupe="tick-2")) != [None]
    assert queue_count(store) == 2


def test_dedupe_holds_only_while_the_item_is_queued(store: Store) -> None:
    enqueue(store, new_item(dedupe="once"))
    [got] = claim(store, now=0)
    # Claiming clears the dedupe text: the next occurrence may be queued while this one runs.
    [again] = enqueue(store, new_item(dedupe="once"))
    assert again is not None and again != got.id


def test_enqueue_creates_the_lane_at_its_earliest_item(store: Store) -> None:
    enqueue(
        store,
        new_item("lane-a", score=50, available_at=300, limits=((K1, 2),)),
        new_item("lane-a", score=20, available_at=100),
        new_item("lane-a", score=90, available_at=200),
    )
    assert lane_row(store, "lane-a") == (100, 20, None)
    [(limits,)] = store.rows("SELECT limits FROM lanes")
    assert json.loads(limits) == [[K1, 2]]


# -- claim order and due times ---------------------------------------------------------------


def test_items_are_claimed_in_score_order_within_a_lane(store: Store) -> None:
    ids = enqueue(store, *(new_item(score=s, step_id=f"s{s}") for s in (30, 10, 20, 10)))
    claimed = claim(store, now=0)
    assert [c.step_id for c in claimed] == ["s10", "s10", "s20", "s30"]
    assert [c.id for c in claimed[:2]] == [ids[1], ids[3]]  # equal scores: first queued first


def test_one_claim_at_a_time_takes_the_lowest_score_first(store: Store) -> None:
    enqueue(store, *(new_item(score=s, step_id=f"s{s}") for s in (3, 1, 2)))
    taken = [claim(store, now=0, max_items=1)[0].step_id for _ in range(3)]
    assert taken == ["s1", "s2", "s3"]
    assert claim(store, now=0) == []


@pytest.mark.parametrize("score", ["distinct", "shared"])
def test_items_deferred_ahead_of_the_window_do_not_hide_the_due_ones(
    store: Store, score: str
) -> None:
    """A throttle defers items and they keep their score: a lane may hold more items not due
    ahead of its due ones than a claim's first look covers (q.ITEMS_WINDOW)."""
    n = 2 * q.ITEMS_WINDOW + 10
    ids = enqueue(store, *(new_item(score=i if score == "distinct" else 0) for i in range(n)))
    deferred = ids[: q.ITEMS_WINDOW + 5]
    store.write(
        lambda c: c.execute(
            text("UPDATE queue SET available_at = 10000 WHERE id IN :ids").bindparams(
                bindparam("ids", expanding=True)
            ),
            {"ids": deferred},
        )
    )
    got = claim(store, now=0, max_items=3)
    assert [c.id for c in got] == ids[q.ITEMS_WINDOW + 5 : q.ITEMS_WINDOW + 8]


def test_items_not_yet_due_are_not_claimed(store: Store) -> None:
    enqueue(store, new_item(score=0, available_at=100, step_id="later"))
    enqueue(store, new_item(score=5, available_at=0, step_id="now"))
    assert [c.step_id for c in claim(store, now=99)] == ["now"]
    assert claim(store, now=99) == []
    assert [c.step_id for c in claim(store, now=100)] == ["later"]


def test_claim_takes_at_most_max_items(store: Store) -> None:
    enqueue(store, *(new_item(f"lane-{i % 3}", score=i) for i in range(10)))
    assert len(claim(store, now=0, max_items=4)) == 4
    assert len(claim(store, now=0, max_items=4)) == 4
    assert len(claim(store, now=0, max_items=4)) == 2


def test_lanes_with_the_lowest_head_score_are_served_first(store: Store) -> None:
    enqueue(store, new_item("lane-late", score=100), new_item("lane-early", score=10))
    [first] = claim(store, now=0, max_items=1)
    assert first.lane == "lane-early"


def test_a_claimed_item_is_not_claimed_again_while_leased(store: Store) -> None:
    enqueue(store, new_item())
    assert len(claim(store, now=0)) == 1
    assert claim(store, now=LEASE - 1) == []


# -- leases ----------------------------------------------------------------------------------


def test_an_expired_lease_makes_the_item_claimable_again(store: Store) -> None:
    enqueue(store, new_item())
    [first] = claim(store, now=0)
    assert claim(store, now=LEASE - 1) == []
    [second] = claim(store, now=LEASE)
    assert second.id == first.id
    assert second.token != first.token
    assert second.claimed_at == LEASE


def test_finish_with_a_stale_token_raises_lease_lost_and_changes_nothing(store: Store) -> None:
    enqueue(store, new_item(limits=((K1, 1),)))
    [first] = claim(store, now=0)
    [second] = claim(store, now=LEASE)
    with pytest.raises(q.LeaseLost):
        finish(store, first, now=LEASE + 1)
    assert queue_count(store) == 1
    assert in_use(store, K1, LEASE + 1) == 1  # the new holder keeps its slot
    finish(store, second, now=LEASE + 2)
    assert queue_count(store) == 0
    assert in_use(store, K1, LEASE + 2) == 0


def test_finishing_twice_raises_lease_lost(store: Store) -> None:
    enqueue(store, new_item())
    [got] = claim(store, now=0)
    finish(store, got, now=1)
    with pytest.raises(q.LeaseLost):
        finish(store, got, now=2)


def test_an_emptied_lane_is_removed_by_the_claim_that_next_looks_at_it(store: Store) -> None:
    enqueue(store, new_item("lane-a"), new_item("lane-a"))
    first, second = claim(store, now=0)
    finish(store, first, now=1)
    finish(store, second, now=2)
    # Finishing leaves the lane as it is (due no later than its head), not re-read each time:
    # the lane is looked at once more, when the lease it last counted on would have ended.
    assert lane_row(store, "lane-a") == (LEASE, 0, None)
    assert store.read(q.next_due) == LEASE
    assert claim(store, now=LEASE) == []
    assert lane_row(store, "lane-a") is None
    assert store.read(q.next_due) is None


@pytest.mark.parametrize("stale", [1, 5])
def test_emptied_lanes_ahead_do_not_send_a_claim_of_one_away_empty(
    store: Store, stale: int
) -> None:
    """Lanes emptied by finished items stay due until a claim looks at them; a claim of one
    item (the next call taken where an answer is applied) looks past them to real work."""
    for i in range(stale):
        enqueue(store, new_item(f"old-{i}", score=i))
    for held in claim(store, now=0, max_items=stale):
        finish(store, held, now=1)
    enqueue(store, new_item("work", score=100, step_id="due"))
    [got] = claim(store, now=LEASE, max_items=1)
    assert (got.lane, got.step_id) == ("work", "due")
    assert due_lanes(store, LEASE) == []  # the emptied lanes were removed on the way


def test_a_claim_looks_past_emptied_lanes_only_a_bounded_number_of_times(store: Store) -> None:
    many = 3 * q.CLAIM_PASSES + 1  # more emptied lanes than one claim of one looks through
    for i in range(many):
        enqueue(store, new_item(f"old-{i}", score=i))
    for held in claim(store, now=0, max_items=many):
        finish(store, held, now=1)
    enqueue(store, new_item("work", score=100))
    assert claim(store, now=LEASE, max_items=1) == []
    assert len(due_lanes(store, LEASE)) < many + 1  # yet each look set some lanes right


def test_a_keyed_lane_emptied_by_a_finish_goes_at_once_with_no_look(store: Store) -> None:
    """Each of many distinct keys has a lane of its own: its one item fills the key, which
    parks the lane; freeing the key would wake it only for a look that finds it empty."""
    enqueue(store, new_item("lane-a", limits=((K1, 1),)), new_item("lane-b", limits=((K2, 1),)))
    a, b = claim(store, now=0)
    assert lane_row(store, "lane-a") == (LEASE, 0, K1)
    finish(store, a, now=1)
    assert lane_row(store, "lane-a") is None
    assert due_lanes(store, now=1) == []  # nothing to look at: no claim comes for it
    assert lane_row(store, "lane-b") is not None
    enqueue(store, new_item("lane-b", score=3, available_at=2, limits=((K2, 1),), step_id="n"))
    finish(store, b, now=2)  # lane-b still holds an item: kept, and woken for it
    assert lane_row(store, "lane-b") == (2, 0, None)
    [got] = claim(store, now=2)
    assert (got.lane, got.step_id) == ("lane-b", "n")


def test_a_finish_then_a_one_item_claim_takes_the_next_keyed_lane(store: Store) -> None:
    """A claim of one item right after a finish (an offer's claim, a scheduler with one free
    worker): with a lane per key, it takes the next run's lane, not the finished run's own
    emptied one."""
    enqueue(store, new_item("lane-a", limits=((K1, 1),)))
    [held] = claim(store, now=0)
    enqueue(store, new_item("lane-b", score=1, limits=((K2, 1),), step_id="next"))

    def finish_and_take_next(conn: Any) -> list[q.Claimed]:
        q.finish(conn, held, 1)
        return q.claim(conn, 1, 1, LEASE)

    [nxt] = store.write(finish_and_take_next)
    assert (nxt.lane, nxt.step_id) == ("lane-b", "next")


def test_an_item_enqueued_into_an_emptied_lane_is_due_at_once(store: Store) -> None:
    enqueue(store, new_item("lane-a"))
    [held] = claim(store, now=0)
    finish(store, held, now=1)
    enqueue(store, new_item("lane-a", score=5, available_at=3, step_id="next"))
    assert lane_row(store, "lane-a") == (3, 0, None)
    [got] = claim(store, now=3)
    assert (got.lane, got.step_id) == ("lane-a", "next")


def test_extend_keeps_the_lease_and_the_slots(store: Store) -> None:
    enqueue(store, new_item(limits=((K1, 1),)), new_item(limits=((K1, 1),)))
    [held] = claim(store, now=0)
    store.write(lambda c: q.extend(c, [held], 5 * LEASE))
    assert claim(store, now=LEASE) == []
    assert in_use(store, K1, 5 * LEASE - 1) == 1
    [again] = claim(store, now=5 * LEASE)
    assert again.id == held.id  # only now, with the extended lease gone


def test_extend_with_a_stale_token_does_not_move_the_new_lease(store: Store) -> None:
    enqueue(store, new_item())
    [stale] = claim(store, now=0)
    [fresh] = claim(store, now=LEASE)
    store.write(lambda c: q.extend(c, [stale], 100 * LEASE))
    [again] = claim(store, now=2 * LEASE)  # the fresh lease ended at 2 * LEASE, not later
    assert again.id == fresh.id


def test_release_all_leases_makes_everything_claimable_at_once(store: Store) -> None:
    enqueue(
        store,
        new_item("lane-a", limits=((K1, 1),)),
        new_item("lane-a", limits=((K1, 1),)),
        new_item("lane-b"),
    )
    held = claim(store, now=0)
    assert claim(store, now=1) == []  # lane-a parks on K1
    assert lane_row(store, "lane-a")[2] == K1  # type: ignore[index]
    released = store.write(lambda c: q.release_all_leases(c, 10))
    assert released == len(held) == 2
    assert store.rows("SELECT count(*) FROM slots") == [(0,)]
    assert store.rows("SELECT count(*) FROM lanes WHERE blocked_on IS NOT NULL") == [(0,)]
    assert store.rows("SELECT count(*) FROM queue WHERE lease_owner IS NOT NULL") == [(0,)]
    for item in held:
        with pytest.raises(q.LeaseLost):
            finish(store, item, now=11)
    again = claim(store, now=10)
    assert sorted(c.id for c in again) == sorted(c.id for c in held)


# -- retry -----------------------------------------------------------------------------------


def test_retry_puts_the_item_back_for_its_next_attempt(store: Store) -> None:
    enqueue(store, new_item(step_id="s"))
    [got] = claim(store, now=0)
    store.write(lambda c: q.retry(c, got, available_at=500, now=10))
    assert claim(store, now=499) == []
    [again] = claim(store, now=500)
    assert (again.id, again.step_id, again.attempt) == (got.id, "s", 1)
    assert again.token != got.token


def test_retry_with_a_stale_token_raises_lease_lost(store: Store) -> None:
    enqueue(store, new_item())
    [stale] = claim(store, now=0)
    [fresh] = claim(store, now=LEASE)
    with pytest.raises(q.LeaseLost):
        store.write(lambda c: q.retry(c, stale, available_at=5, now=LEASE + 1))
    assert store.rows("SELECT attempt, lease_owner FROM queue") == [(0, fresh.token)]


def test_retry_frees_the_slot_for_the_next_item(store: Store) -> None:
    enqueue(
        store,
        new_item(score=0, step_id="a", limits=((K1, 1),)),
        new_item(score=1, step_id="b", limits=((K1, 1),)),
    )
    [a] = claim(store, now=0)
    assert claim(store, now=1) == []
    store.write(lambda c: q.retry(c, a, available_at=1000, now=2))
    assert [c.step_id for c in claim(store, now=2)] == ["b"]


# -- concurrency limits and parked lanes -----------------------------------------------------


@pytest.mark.parametrize("limit", [1, 2])
def test_a_lane_never_holds_more_than_its_limit(store: Store, limit: int) -> None:
    enqueue(store, *(new_item(score=i, limits=((K1, limit),)) for i in range(5)))
    now, done = 0, 0
    while done < 5:
        held = claim(store, now=now)
        assert len(held) == limit if 5 - done >= limit else len(held) == 5 - done
        assert in_use(store, K1, now) == len(held)
        assert claim(store, now=now) == []  # full: nothing more, however often we ask
        for item in held:
            finish(store, item, now=now)
            done += 1
        now += 1
    assert queue_count(store) == 0


def test_a_key_shared_by_two_lanes_limits_them_together(store: Store) -> None:
    enqueue(store, *(new_item("lane-a", score=i, limits=((K1, 2),)) for i in range(3)))
    enqueue(store, *(new_item("lane-b", score=i, limits=((K1, 2), (K2, 5))) for i in range(3)))
    held = claim(store, now=0)
    assert len(held) == 2
    assert claim(store, now=1) == []
    assert in_use(store, K1, 1) == 2
    finish(store, held[0], now=2)
    [next_one] = claim(store, now=2)
    assert K1 in next_one.keys


def test_the_tightest_of_several_keys_governs(store: Store) -> None:
    enqueue(store, *(new_item(score=i, limits=((K1, 5), (K2, 2))) for i in range(6)))
    held = claim(store, now=0)
    assert len(held) == 2
    assert all(h.keys == (K1, K2) for h in held)
    assert (in_use(store, K1, 0), in_use(store, K2, 0)) == (2, 2)


def test_a_limit_of_zero_means_unlimited(store: Store) -> None:
    enqueue(store, *(new_item(score=i, limits=((K1, 0),)) for i in range(6)))
    assert len(claim(store, now=0)) == 6


def test_a_full_lane_is_parked_on_its_key_and_not_scanned(store: Store) -> None:
    enqueue(store, *(new_item("lane-a", score=i, limits=((K1, 1),)) for i in range(3)))
    [held] = claim(store, now=0)
    assert claim(store, now=5) == []  # looks once, finds K1 full, parks
    assert lane_row(store, "lane-a") == (LEASE, 1, K1)  # next look: when the slot would expire
    assert due_lanes(store, now=LEASE - 1) == []
    # A new item in a parked lane does not unpark it: its head still needs the key.
    enqueue(store, new_item("lane-a", score=-5, available_at=6, limits=((K1, 1),)))
    assert lane_row(store, "lane-a") == (LEASE, -5, K1)
    assert due_lanes(store, now=LEASE - 1) == []
    finish(store, held, now=7)  # the slot frees: the lane is due again at once
    assert lane_row(store, "lane-a")[2] is None  # type: ignore[index]
    assert due_lanes(store, now=7) == ["lane-a"]
    [nxt] = claim(store, now=7)
    assert nxt.payload == {} and nxt.lane == "lane-a"


def test_a_claim_that_fills_a_key_parks_the_lane_until_the_key_s_earliest_slot_ends(
    store: Store,
) -> None:
    # a key nobody held: every slot is this claim's, so the lane looks again when they end
    enqueue(store, *(new_item("lane-a", score=i, limits=((K1, 2),)) for i in range(3)))
    assert len(claim(store, now=50)) == 2
    assert lane_row(store, "lane-a") == (50 + LEASE, 2, K1)
    # a key another lane holds a slot of, ending earlier: the lane looks again then
    enqueue(store, new_item("lane-b", limits=((K2, 2),)))
    [held] = claim(store, now=0, max_items=1)
    enqueue(store, *(new_item("lane-c", score=10 + i, limits=((K2, 2),)) for i in range(2)))
    assert [c.lane for c in claim(store, now=60)] == ["lane-c"]
    assert lane_row(store, "lane-c") == (LEASE, 11, K2)
    assert in_use(store, K2, 60) == 2 and held.lane == "lane-b"


def test_freeing_a_shared_key_wakes_the_lanes_parked_on_it(store: Store) -> None:
    enqueue(store, new_item("lane-a", limits=((K1, 1),)))
    [held] = claim(store, now=0)
    enqueue(store, new_item("lane-b", limits=((K1, 1),)))
    assert claim(store, now=1) == []
    assert lane_row(store, "lane-b") == (LEASE, 0, K1)
    finish(store, held, now=2)
    assert lane_row(store, "lane-b") == (2, 0, None)
    [got] = claim(store, now=2)
    assert got.lane == "lane-b"


def test_a_parked_lane_is_looked_at_again_when_the_holder_s_lease_runs_out(store: Store) -> None:
    enqueue(
        store,
        new_item(score=0, step_id="a", limits=((K1, 1),)),
        new_item(score=1, step_id="b", limits=((K1, 1),)),
    )
    [a] = claim(store, now=0)
    assert claim(store, now=1) == []
    # The holder died without finishing: at its lease's end the lane is due, the slot is free,
    # and the dead holder's item (lower score) is taken over first.
    assert due_lanes(store, now=LEASE) == ["lane-a"]
    [again] = claim(store, now=LEASE)
    assert (again.id, again.step_id) == (a.id, "a")
    assert in_use(store, K1, LEASE) == 1


def test_a_full_key_does_not_hold_up_other_lanes(store: Store) -> None:
    enqueue(store, *(new_item("hot", score=i, limits=((K1, 1),)) for i in range(50)))
    enqueue(store, *(new_item(f"cold-{i}", score=100 + i) for i in range(3)))
    first = claim(store, now=0, max_items=1)
    assert [c.lane for c in first] == ["hot"]
    rest = claim(store, now=0)
    assert sorted(c.lane for c in rest) == ["cold-0", "cold-1", "cold-2"]
    assert lane_row(store, "hot")[2] == K1  # type: ignore[index]


@pytest.mark.parametrize("seed", range(4))
def test_random_claims_finishes_and_retries_never_exceed_any_limit(store: Store, seed: int) -> None:
    rng = random.Random(seed)
    lane_limits = {
        "a": ((K1, 1),),
        "b": ((K1, 1), (K2, 2)),
        "c": ((K2, 2),),
        "d": ((K3, 2),),
        "e": (),
    }
    limit_of = {K1: 1, K2: 2, K3: 2}
    total = 40
    for _ in range(total):
        lane = rng.choice(sorted(lane_limits))
        enqueue(store, new_item(lane, score=rng.randint(0, 100), limits=lane_limits[lane]))
    lease = 10**9  # no lease runs out here: every held item is really held
    held: dict[int, q.Claimed] = {}
    now, finished = 0, 0
    for _ in range(3000):
        if finished == total:
            break
        now += rng.randint(0, 3)
        action = rng.random()
        if action < 0.5 or not held:
            for c in claim(store, now=now, max_items=rng.randint(1, 5), lease=lease):
                assert c.id not in held
                held[c.id] = c
        elif action < 0.7:
            item = held.pop(rng.choice(sorted(held)))
            finish(store, item, now=now)
            finished += 1
        elif action < 0.85:  # as a worker does that takes its next item where it applied one
            item = held.pop(rng.choice(sorted(held)))
            nxt = store.write(partial(_finish_and_hand_on, item=item, now=now, lease=lease))
            finished += 1
            if nxt is not None:
                assert nxt.id not in held and nxt.lane == item.lane
                held[nxt.id] = nxt
        else:
            item = held.pop(rng.choice(sorted(held)))
            when = now + rng.randint(0, 20)
            store.write(partial(q.retry, item=item, available_at=when, now=now))
        counts = Counter(key for item in held.values() for key in item.keys)
        for key, limit in limit_of.items():
            assert counts[key] <= limit
            assert in_use(store, key, now) == counts[key]
    assert finished == total
    assert queue_count(store) == 0


def _finish_and_hand_on(
    conn: Connection, item: q.Claimed, now: int, lease: int
) -> q.Claimed | None:
    q.finish(conn, item, now, keep_slots=True)
    return q.hand_on(conn, item, now, lease)


# -- removal, timers, next due ---------------------------------------------------------------


def test_remove_run_items_keeps_the_finishing_item_and_items_in_flight(store: Store) -> None:
    ids = enqueue(
        store,
        new_item("lane-a", score=0, run_id="run-1", step_id="in-flight"),
        new_item("lane-b", score=1, run_id="run-1", step_id="queued", available_at=50),
        new_item("lane-c", score=2, run_id="run-1", step_id="keep", available_at=50),
        new_item("lane-d", score=3, run_id="run-2", step_id="other", available_at=50),
    )
    claim(store, now=0)
    store.write(lambda c: q.remove_run_items(c, "run-1", ids[2], 1))
    left = store.rows("SELECT step_id FROM queue ORDER BY id")
    assert left == [("in-flight",), ("keep",), ("other",)]
    # The emptied lane stays until its next look, which finds it empty and removes it.
    assert lane_row(store, "lane-b") == (50, 1, None)
    assert [c.step_id for c in claim(store, now=50)] == ["keep", "other"]
    assert lane_row(store, "lane-b") is None


def test_remove_by_dedupe_drops_only_the_queued_item(store: Store) -> None:
    enqueue(store, new_item("lane-a", dedupe="x"), new_item("lane-b", dedupe="y"))
    store.write(lambda c: q.remove_by_dedupe(c, "x"))
    store.write(lambda c: q.remove_by_dedupe(c, "absent"))
    assert store.rows("SELECT dedupe FROM queue") == [("y",)]
    assert [c.lane for c in claim(store, now=0)] == ["lane-b"]  # lane-a: looked at, empty
    assert lane_row(store, "lane-a") is None


def test_timer_items_are_claimed_without_any_limit(store: Store) -> None:
    enqueue(store, *(new_item(q.TIMER_LANE, kind="sleep", available_at=i) for i in range(20)))
    assert len(claim(store, now=19, max_items=100)) == 20


def test_next_due_is_the_earliest_lane_look(store: Store) -> None:
    assert store.read(q.next_due) is None
    enqueue(store, new_item("lane-a", available_at=300), new_item("lane-b", available_at=200))
    assert store.read(q.next_due) == 200
    claim(store, now=200)
    assert store.read(q.next_due) == 300


# -- several processes sharing one store -----------------------------------------------------


def test_two_writers_sharing_one_database_never_exceed_a_limit(store: Store) -> None:
    """Invariant 3 across processes: each Database stands for one Weir process."""
    other = Database(make_engine(store.url))
    total = 40
    enqueue(store, *(new_item(f"lane-{i % 2}", score=i, limits=((K1, 1),)) for i in range(total)))
    lock = threading.Lock()
    held: set[int] = set()
    problems: list[str] = []
    finished = [0]

    def work(db: Database) -> None:
        for _ in range(20 * total):
            if finished[0] >= total or problems:
                return
            try:
                claimed = db.write_sync(lambda c: q.claim(c, 0, 2, 10**9))
            except Exception as exc:
                problems.append(f"claim raised {exc!r}")
                return
            with lock:
                for c in claimed:
                    if c.id in held:
                        problems.append(f"item {c.id} claimed by two holders at once")
                    held.add(c.id)
                if len(held) > 1:
                    problems.append(f"{len(held)} items hold key K1 (limit 1): {sorted(held)}")
            for c in claimed:
                with lock:
                    held.discard(c.id)
                try:
                    db.write_sync(partial(q.finish, item=c, now=0))
                except Exception as exc:
                    problems.append(f"finish of item {c.id} raised {exc!r}: claimed twice?")
                    return
                with lock:
                    finished[0] += 1

    threads = [threading.Thread(target=work, args=(db,)) for db in (store.db, other)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        other.close()
    assert problems == []
    assert finished[0] == total


def leased_rows(store: Store) -> list[tuple[Any, ...]]:
    return store.rows(
        "SELECT id, available_at, lease_owner, claimed_at, dedupe, created_at FROM queue "
        "WHERE lease_owner IS NOT NULL ORDER BY id"
    )


@pytest.mark.parametrize("dedupe", [None, "discover:run-1"])
def test_an_item_enqueued_claimed_is_leased_as_a_claim_would_lease_it(
    store: Store, dedupe: str | None
) -> None:
    item = new_item(
        "lane-c", score=5, available_at=900, run_id="run-1", dedupe=dedupe, step_id="s-2"
    )
    got = store.write(lambda c: q.enqueue_claimed(c, item, 1_000, LEASE))
    assert got is not None and got.claimed_at == 1_000 and got.run_id == "run-1"
    # its lease and token; no dedupe of its own, so the next one of that name may be queued
    assert leased_rows(store) == [(got.id, 1_000 + LEASE, got.token, 1_000, None, 900)]
    stored = store.rows(
        "SELECT kind, run_id, function_id, step_id, attempt, score, lane, payload FROM queue"
    )
    assert stored == [("exec", "run-1", "fn-1", "s-2", 0, 5, "lane-c", "{}")]
    assert lane_row(store, "lane-c") == (1_000 + LEASE, 5, None)
    again = new_item("lane-c", score=6, available_at=1_000, run_id="run-1", dedupe=dedupe)
    assert enqueue(store, again)[0] is not None
    finish(store, got, 1_001)
    assert claim(store, 1_001) != []  # the lease was a claim's: finishing with its token works


def test_an_item_whose_dedupe_is_queued_is_not_enqueued_claimed(store: Store) -> None:
    queued = new_item("lane-c", available_at=2_000, run_id="run-1", dedupe="discover:run-1")
    (first,) = enqueue(store, queued)
    twin = new_item("lane-c", available_at=1_000, run_id="run-1", dedupe="discover:run-1")
    assert store.write(lambda c: q.enqueue_claimed(c, twin, 1_000, LEASE)) is None
    assert store.rows("SELECT id FROM queue") == [(first,)]  # nothing added, nothing leased


# -- a run's next call in its finished call's row ---------------------------------------------


def leased_call(store: Store, now: int = 1_000, lease: int = LEASE) -> q.Claimed:
    item = new_item("lane-c", score=5, available_at=now, run_id="run-1", step_id="s-1")
    got = store.write(lambda c: q.enqueue_claimed(c, item, now, lease))
    assert got is not None
    return got


def in_place(store: Store, done: q.Claimed, item: q.NewItem, now: int) -> q.Claimed | None:
    return store.write(lambda c: q.enqueue_in_place(c, done, item, now, LEASE))


@pytest.mark.parametrize("dedupe", [None, "discover:run-1"])
def test_the_next_call_takes_the_finished_calls_row_with_a_lease_of_its_own(
    store: Store, dedupe: str | None
) -> None:
    done = leased_call(store)
    nxt = new_item(
        "lane-c", score=5, available_at=1_200, run_id="run-1", dedupe=dedupe, step_id="s-2"
    )
    got = in_place(store, done, nxt, 1_200)
    assert got is not None and got.id == done.id and got.token != done.token
    assert (got.step_id, got.claimed_at, got.run_id) == ("s-2", 1_200, "run-1")
    # one row, leased as `enqueue_claimed` leases (no dedupe of its own), the lane untouched
    assert leased_rows(store) == [(done.id, 1_200 + LEASE, got.token, 1_200, None, 1_200)]
    assert store.rows("SELECT step_id, score, payload FROM queue") == [("s-2", 5, "{}")]
    assert lane_row(store, "lane-c") == (1_000 + LEASE, 5, None)
    with pytest.raises(q.LeaseLost):  # the finished call's lease is gone with it
        finish(store, done, 1_201)
    finish(store, got, 1_201)
    assert queue_count(store) == 0


def test_a_next_call_due_before_the_lane_would_look_moves_the_lane_earlier(store: Store) -> None:
    done = leased_call(store, lease=60_000)  # the lane is looked at when this lease runs out
    nxt = new_item("lane-c", score=3, available_at=1_100, run_id="run-1")
    got = in_place(store, done, nxt, 1_100)  # leased for LEASE, ends long before that
    assert got is not None and got.id == done.id
    assert lane_row(store, "lane-c") == (1_100 + LEASE, 3, None)


def test_a_queued_twin_leaves_the_finished_call_finished_and_takes_no_row(store: Store) -> None:
    done = leased_call(store)
    (twin,) = enqueue(store, new_item("lane-c", available_at=2_000, run_id="run-1", dedupe="d"))
    nxt = new_item("lane-c", available_at=1_100, run_id="run-1", dedupe="d")
    assert in_place(store, done, nxt, 1_100) is None
    assert store.rows("SELECT id FROM queue") == [(twin,)]  # the twin only, not leased


def test_a_finished_call_whose_lease_was_lost_gives_no_row(store: Store) -> None:
    done = leased_call(store)
    (taken,) = claim(store, 1_000 + LEASE + 1)  # the lease ran out: another claim has it
    nxt = new_item("lane-c", available_at=1_100, run_id="run-1")
    with pytest.raises(q.LeaseLost):
        in_place(store, done, nxt, 1_100)
    assert leased_rows(store)[0][2] == taken.token  # the other claim's lease stands


@pytest.mark.parametrize(
    "change",
    [{"run_id": "run-2"}, {"lane": "lane-d"}, {"payload": {"throttle": 1}}, {"limits": ((K1, 1),)}],
)
def test_only_a_slotless_call_of_the_same_run_and_lane_takes_the_row(
    store: Store, change: dict[str, Any]
) -> None:
    done = leased_call(store)
    nxt = new_item("lane-c", available_at=1_100, run_id="run-1")
    other = replace(nxt, **change)
    with pytest.raises(ValueError, match="same run and lane"):
        in_place(store, done, other, 1_100)
    assert leased_rows(store)[0][:3] == (done.id, 1_000 + LEASE, done.token)  # untouched


def test_a_row_s_series_counts_its_calls_and_stays_through_retries(store: Store) -> None:
    done = leased_call(store)
    assert done.series == 0
    got = in_place(store, done, new_item("lane-c", score=5, run_id="run-1"), 1_100)
    assert got is not None and got.series == 1
    store.write(lambda c: q.retry(c, got, 1_200, 1_100))  # another attempt of the same call
    (again,) = claim(store, 1_200)
    assert (again.id, again.series, again.attempt) == (done.id, 1, 1)
    assert store.rows("SELECT series FROM queue") == [(1,)]


def test_a_lower_score_alone_moves_the_lane_s_head(store: Store) -> None:
    done = leased_call(store)  # score 5
    got = in_place(store, done, new_item("lane-c", score=2, run_id="run-1"), 1_000)
    assert got is not None  # due no earlier than the lane looks: only the score moved
    assert lane_row(store, "lane-c") == (1_000 + LEASE, 2, None)
