"""Raising a capacity wakes only as many parked lanes as it has new free slots (no thundering
herd); a slot released later still wakes the lanes parked on its key as before."""

from functools import partial

from weir.platform.foundation.vocabulary import CapacityKind
from weir.platform.store import queue as q
from weir.platform.store.flow import capacity

from tests.support.store_kit import LEASE, Store, new_item

SHARED = "k1" * 16  # one key hash every lane needs a slot of
OTHER = "k2" * 16  # another key value sized by the same capacity
CAP = "cc" * 16
KIND = CapacityKind.CONCURRENCY


def enqueue_lanes(store: Store, names: list[str], key: str, first_score: int = 0) -> None:
    """One lane per name (each its own function key), all needing a slot of `key`."""
    for i, name in enumerate(names):
        own = q.SlotLimit(f"own-{name}".ljust(32, "x"), 0, "")  # limit 0: no limit of its own
        item = new_item(name, score=first_score + i, limits=(own, q.SlotLimit(key, 1, CAP)))
        store.write(partial(q.enqueue, item=item))


def claim(store: Store, now: int, max_items: int = 100) -> list[q.Claimed]:
    return store.write(lambda c: q.claim(c, now, max_items, LEASE))


def parked(store: Store) -> dict[str, str | None]:
    return dict(store.rows("SELECT lane, blocked_on FROM lanes"))  # type: ignore[arg-type]


def raise_to(store: Store, size: int, revision: int, now: int) -> None:
    store.write(lambda c: capacity.set_capacity(c, KIND, CAP, size, revision, "alice", now))


def test_raising_wakes_only_as_many_lanes_as_new_free_slots(store: Store) -> None:
    store.write(lambda c: capacity.declare(c, KIND, CAP, "scope shared", 1, 0))
    names = [f"lane-{i:02}" for i in range(20)]
    enqueue_lanes(store, names, SHARED)
    [first] = claim(store, now=0)  # lane-00 takes the one slot; the 19 others park on the key
    assert first.lane == "lane-00"
    waiting = {lane for lane, key in parked(store).items() if key == SHARED and lane != "lane-00"}
    assert len(waiting) == 19

    raise_to(store, 4, revision=1, now=1)  # 3 new free slots

    states = parked(store)
    woken = sorted(lane for lane in waiting if states[lane] is None)
    assert woken == ["lane-01", "lane-02", "lane-03"]  # the earliest heads, and only three
    claimed = claim(store, now=1)
    assert sorted(item.lane for item in claimed) == woken  # each woken lane got a slot
    assert store.rows("SELECT count(*) FROM slots WHERE key_hash = :k", k=SHARED) == [(4,)]
    still = sorted(lane for lane, key in parked(store).items() if key == SHARED)
    # the 16 never woken, and the two whose claims filled the key (parked again at once)
    assert still == ["lane-00", *names[3:]]


def test_each_key_of_the_capacity_gets_its_own_free_slots(store: Store) -> None:
    store.write(lambda c: capacity.declare(c, KIND, CAP, "scope shared", 1, 0))
    enqueue_lanes(store, [f"a-{i}" for i in range(5)], SHARED)
    enqueue_lanes(store, [f"b-{i}" for i in range(5)], OTHER, first_score=100)
    assert len(claim(store, now=0)) == 2  # a-0 and b-0 hold one slot of each key
    finish_b = claim(store, now=0)
    assert finish_b == []

    raise_to(store, 3, revision=1, now=1)

    states = parked(store)
    assert sorted(lane for lane, key in states.items() if key is None) == [
        "a-1",
        "a-2",
        "b-1",
        "b-2",
    ]


def test_slots_already_in_use_are_not_free_slots(store: Store) -> None:
    store.write(lambda c: capacity.declare(c, KIND, CAP, "scope shared", 2, 0))
    enqueue_lanes(store, [f"lane-{i}" for i in range(6)], SHARED)
    assert len(claim(store, now=0)) == 2
    store.write(lambda c: capacity.set_capacity(c, KIND, CAP, 1, 1, "alice", 1))  # lowered
    raise_to(store, 3, revision=2, now=2)  # 2 in use, capacity 3: one free slot
    waiting = {f"lane-{i}" for i in range(2, 6)}  # lane-0 and lane-1 hold the two slots
    assert sorted(
        lane for lane, key in parked(store).items() if lane in waiting and key is None
    ) == ["lane-2"]
    assert [item.lane for item in claim(store, now=2)] == ["lane-2"]


def test_a_released_slot_still_wakes_the_lanes_parked_on_its_key(store: Store) -> None:
    store.write(lambda c: capacity.declare(c, KIND, CAP, "scope shared", 1, 0))
    enqueue_lanes(store, [f"lane-{i}" for i in range(4)], SHARED)
    [held] = claim(store, now=0)
    raise_to(store, 1, revision=1, now=1)  # not raised: nothing to wake
    assert all(key == SHARED for key in parked(store).values())
    store.write(lambda c: q.finish(c, held, 2))
    [nxt] = claim(store, now=2)
    assert nxt.lane == "lane-1"  # the earliest head takes the freed slot


def test_a_lane_whose_items_all_execute_takes_the_new_room_for_work_enqueued_later(
    store: Store,
) -> None:
    """The claim that filled the key parked the lane, with nothing due behind its executing
    item: raised meanwhile, the work that arrives after the raise starts at once, without
    waiting for the holder to end or its lease to run out."""
    store.write(lambda c: capacity.declare(c, KIND, CAP, "scope shared", 1, 0))
    limits = (q.SlotLimit(SHARED, 1, CAP),)
    store.write(partial(q.enqueue, item=new_item("only", limits=limits)))
    [held] = claim(store, now=0)
    assert parked(store) == {"only": SHARED}  # filled by this claim: parked at once

    raise_to(store, 3, revision=1, now=1)
    for i in (1, 2, 3):
        store.write(
            partial(q.enqueue, item=new_item("only", score=i, available_at=2, limits=limits))
        )

    assert len(claim(store, now=2)) == 2  # the two slots the raise added; the third waits
    assert store.rows("SELECT count(*) FROM slots WHERE key_hash = :k", k=SHARED) == [(3,)]
    assert held.keys == (SHARED,)


def test_idle_lanes_leave_the_new_room_to_lanes_with_due_work(store: Store) -> None:
    """Lanes with work due take the new slots first; an idle lane is unparked only if room is
    left after them."""
    store.write(lambda c: capacity.declare(c, KIND, CAP, "scope shared", 1, 0))
    enqueue_lanes(store, ["lane-0", "lane-1", "lane-2"], SHARED)
    claim(store, now=0)  # lane-0 holds the slot, idle behind it; lane-1 and lane-2 wait
    raise_to(store, 2, revision=1, now=1)  # one new slot: lane-1's
    assert parked(store) == {"lane-0": SHARED, "lane-1": None, "lane-2": SHARED}
    raise_to(store, 4, revision=2, now=1)  # two more: lane-2 takes one, one is left
    assert parked(store) == {"lane-0": None, "lane-1": None, "lane-2": None}
