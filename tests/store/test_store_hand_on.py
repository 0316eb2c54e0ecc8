"""A finished item's concurrency slots passed straight to the next due item of its lane
(`queue.hand_on`): a hot key's next run starts with no wake, claim and re-park in between,
and only when the claim would have chosen the same item."""

from functools import partial

from sqlalchemy import Connection, text
from weir.platform.foundation.vocabulary import CapacityKind
from weir.platform.store import queue as q
from weir.platform.store.flow import capacity, rolling_windows
from weir.platform.store.flow.rolling_windows import Scope

from tests.support.store_kit import LEASE, Store, new_item

K1, K2 = "k1" * 16, "k2" * 16
CAP = "cc" * 16


def enqueue(store: Store, *items: q.NewItem) -> None:
    for item in items:
        store.write(partial(q.enqueue, item=item))


def claim(store: Store, now: int, max_items: int = 10) -> list[q.Claimed]:
    return store.write(lambda c: q.claim(c, now, max_items, LEASE))


def finish_and_hand_on(store: Store, item: q.Claimed, now: int) -> q.Claimed | None:
    """As the worker that applied `item`'s answer does, in one transaction."""

    def job(conn: Connection) -> q.Claimed | None:
        q.finish(conn, item, now, keep_slots=True)
        return q.hand_on(conn, item, now, LEASE)

    return store.write(job)


def slots(store: Store) -> list[tuple[object, ...]]:
    return store.rows("SELECT key_hash, item_id, expires_at FROM slots ORDER BY key_hash")


def lanes(store: Store) -> dict[str, tuple[object, ...]]:
    rows = store.rows("SELECT lane, next_at, head_score, blocked_on FROM lanes")
    return {str(row[0]): row[1:] for row in rows}


def hot_lane(
    store: Store, n: int, limits: tuple[q.SlotLimit, ...] = (q.SlotLimit(K1, 1),)
) -> q.Claimed:
    enqueue(store, *(new_item("hot", score=i, step_id=f"s{i}", limits=limits) for i in range(n)))
    [first] = claim(store, now=0)
    assert claim(store, now=1) == []  # the key is full: the lane is parked on it
    return first


def test_the_next_item_of_the_lane_takes_the_slot_in_the_same_transaction(store: Store) -> None:
    first = hot_lane(store, 3)
    parked = lanes(store)["hot"]
    assert parked[2] == K1
    second = finish_and_hand_on(store, first, now=5)
    assert second is not None and second.step_id == "s1"
    assert (second.claimed_at, second.keys, second.limits) == (5, (K1,), (q.SlotLimit(K1, 1),))
    assert second.fences == {K1: first.fences[K1] + 1}  # a new holder: a higher token
    assert slots(store) == [(K1, second.id, 5 + LEASE)]  # the same key's one slot, moved
    assert lanes(store)["hot"] == parked  # neither woken nor parked again
    assert claim(store, now=6) == []  # still full
    third = finish_and_hand_on(store, second, now=7)
    assert third is not None and third.step_id == "s2"
    assert finish_and_hand_on(store, third, now=8) is None
    assert slots(store) == [] and lanes(store) == {}  # the emptied lane goes with its slot


def test_a_lane_parked_on_the_key_makes_the_claim_decide(store: Store) -> None:
    first = hot_lane(store, 2)
    enqueue(store, new_item("other", score=-1, limits=(q.SlotLimit(K1, 1),)))
    assert claim(store, now=2) == []
    assert lanes(store)["other"][2] == K1  # waits for the key, with an older head
    assert finish_and_hand_on(store, first, now=3) is None
    assert slots(store) == []
    assert lanes(store)["other"] == (3, -1, None)  # woken, as a release wakes it
    [nxt] = claim(store, now=3)
    assert nxt.lane == "other"


def test_older_due_work_elsewhere_goes_to_the_claim_first(store: Store) -> None:
    first = hot_lane(store, 2)
    enqueue(store, new_item("free", score=0))  # as old as the hot lane's next item
    assert finish_and_hand_on(store, first, now=3) is None
    assert slots(store) == []
    assert [c.lane for c in claim(store, now=3, max_items=1)] == ["free"]
    assert [c.step_id for c in claim(store, now=3)] == ["s1"]


def test_a_next_item_not_due_yet_leaves_the_slot_free(store: Store) -> None:
    first = hot_lane(store, 1)
    enqueue(store, new_item("hot", score=1, available_at=50, limits=(q.SlotLimit(K1, 1),)))
    assert finish_and_hand_on(store, first, now=3) is None
    assert slots(store) == []
    assert lanes(store)["hot"][2] is None  # woken: its item is due at 50
    assert claim(store, now=49) == []
    assert len(claim(store, now=50)) == 1


def test_a_capacity_lowered_under_the_other_holders_keeps_new_holders_waiting(
    store: Store,
) -> None:
    kind = CapacityKind.CONCURRENCY
    store.write(lambda c: capacity.declare(c, kind, CAP, "shared", 2, 0))
    limits = (q.SlotLimit(K1, 2, CAP),)
    enqueue(store, *(new_item("hot", score=i, limits=limits) for i in range(4)))
    a, b = claim(store, now=0)
    store.write(lambda c: capacity.set_capacity(c, kind, CAP, 1, 1, "alice", 1))
    assert finish_and_hand_on(store, a, now=2) is None  # b alone fills the new size
    assert slots(store) == [(K1, b.id, LEASE)]
    assert claim(store, now=2) == []
    nxt = finish_and_hand_on(store, b, now=3)  # nobody else holds one: 0 < 1
    assert nxt is not None and nxt.keys == (K1,)
    assert slots(store) == [(K1, nxt.id, 3 + LEASE)]


def test_every_key_of_the_lane_moves_to_the_next_item(store: Store) -> None:
    first = hot_lane(store, 2, limits=(q.SlotLimit(K1, 1), q.SlotLimit(K2, 3)))
    nxt = finish_and_hand_on(store, first, now=4)
    assert nxt is not None and nxt.keys == (K1, K2)
    assert nxt.fences.keys() == {K1}  # only a key of limit 1 has fencing tokens
    assert slots(store) == [(K1, nxt.id, 4 + LEASE), (K2, nxt.id, 4 + LEASE)]


def test_a_next_start_deferred_by_its_rolling_window_frees_the_slot(store: Store) -> None:
    window = Scope("ww" * 16, limit=1, window_ms=1_000)
    payload = rolling_windows.payload([window])
    items = [
        new_item("hot", score=i, limits=(q.SlotLimit(K1, 1),), payload=payload) for i in range(2)
    ]
    enqueue(store, *items)
    [first] = claim(store, now=0)
    assert finish_and_hand_on(store, first, now=10) is None  # the window is full until 1,000
    assert slots(store) == []
    assert store.rows("SELECT available_at FROM queue") == [(1_000,)]  # deferred, not skipped
    [later] = claim(store, now=1_000)
    assert later.lane == "hot"


def test_a_finish_that_keeps_its_slots_holds_them_until_handed_on(store: Store) -> None:
    first = hot_lane(store, 2)
    store.write(lambda c: q.finish(c, first, 2, keep_slots=True))
    assert slots(store) == [(K1, first.id, LEASE)]  # still counted: nobody takes the key
    assert claim(store, now=3) == []


def test_a_next_item_with_a_slot_row_left_from_a_lapsed_lease_takes_its_slot(
    store: Store,
) -> None:
    first = hot_lane(store, 2)
    [(nxt_id,)] = store.rows("SELECT id FROM queue WHERE lease_owner IS NULL")
    # Its earlier holder died: the lease ran out and the claim that renews such a row has not
    # come yet. The slot cannot move onto it (one row per key and item): the row is renewed.
    store.write(
        lambda c: c.execute(
            text("INSERT INTO slots (key_hash, item_id, expires_at) VALUES (:k, :i, 1)"),
            {"k": K1, "i": nxt_id},
        )
    )
    nxt = finish_and_hand_on(store, first, now=5)
    assert nxt is not None and nxt.id == nxt_id
    assert slots(store) == [(K1, nxt_id, 5 + LEASE)]


def test_a_lane_parked_on_another_of_the_keys_makes_the_claim_decide(store: Store) -> None:
    first = hot_lane(store, 2, limits=(q.SlotLimit(K1, 1), q.SlotLimit(K2, 1)))
    enqueue(store, new_item("other", score=-1, limits=(q.SlotLimit(K2, 1),)))
    assert claim(store, now=2) == []
    assert lanes(store)["other"][2] == K2
    assert finish_and_hand_on(store, first, now=3) is None
    assert slots(store) == []
    assert [c.lane for c in claim(store, now=3, max_items=1)] == ["other"]
