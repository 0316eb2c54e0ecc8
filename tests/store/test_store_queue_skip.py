"""Claiming past functions: the scheduler passes over the functions of an app it already calls
as much as it may, so the claim reaches the other apps' lanes, and the next due time ignores
them. Every lane of a skipped function is passed over (an app's work may lie in a lane per
key), and the timers' lane, of every function, never is."""

from functools import partial

from sqlalchemy import text
from weir.platform.store import queue as q

from tests.support.store_kit import LEASE, Store, new_item


def test_a_skipped_functions_lanes_are_neither_claimed_nor_counted_as_due(store: Store) -> None:
    for lane in ("full-1", "full-2"):  # two keys of one function
        store.write(partial(q.enqueue, item=new_item(lane, score=1, function_id="fa")))
    store.write(partial(q.enqueue, item=new_item("other", score=2, available_at=50)))
    # one item at a time: without the skip the earlier-scored "full" lanes always come first
    claimed = store.write(lambda c: q.claim(c, 100, 1, LEASE, {"fa"}))
    assert [item.lane for item in claimed] == ["other"]
    assert store.read(lambda c: q.next_due(c, {"fa"})) == 100 + LEASE  # "other"'s lease
    assert store.read(q.next_due) == 0  # "full" is due
    claimed = store.write(lambda c: q.claim(c, 100, 5, LEASE))
    assert sorted(i.lane for i in claimed) == ["full-1", "full-2"]


def test_the_timers_lane_is_claimed_whatever_is_skipped(store: Store) -> None:
    timer = new_item(q.TIMER_LANE, score=5, kind="sleep", function_id="fa")
    store.write(partial(q.enqueue, item=timer))
    store.write(partial(q.enqueue, item=new_item("full-1", score=1, function_id="fa")))
    assert store.read(lambda c: q.next_due(c, {"fa"})) == 0
    claimed = store.write(lambda c: q.claim(c, 100, 5, LEASE, {"fa"}))
    assert [item.lane for item in claimed] == [q.TIMER_LANE]


def test_a_lane_that_does_not_name_its_function_learns_it_from_its_next_item(
    store: Store,
) -> None:
    """A lane made before the column existed, or by an older process sharing the database."""
    store.write(partial(q.enqueue, item=new_item("old", score=1, function_id="fa")))
    store.write(lambda c: c.execute(text("UPDATE lanes SET function_id = NULL")))
    store.write(partial(q.enqueue, item=new_item("old", score=2, function_id="fa")))
    assert store.write(lambda c: q.claim(c, 100, 5, LEASE, {"fa"})) == []
    assert len(store.write(lambda c: q.claim(c, 100, 5, LEASE))) == 2
