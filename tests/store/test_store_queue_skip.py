"""Claiming past lanes: the scheduler passes over the lanes of an app it already calls as much
as it may, so the claim reaches the other apps' lanes, and the next due time ignores them."""

from functools import partial

from weir.platform.store import queue as q

from tests.support.store_kit import LEASE, Store, new_item


def test_a_skipped_lane_is_neither_claimed_nor_counted_as_due(store: Store) -> None:
    store.write(partial(q.enqueue, item=new_item("full", score=1, available_at=0)))
    store.write(partial(q.enqueue, item=new_item("other", score=2, available_at=50)))
    # one item at a time: without the skip the earlier-scored "full" lane always comes first
    claimed = store.write(lambda c: q.claim(c, 100, 1, LEASE, {"full"}))
    assert [item.lane for item in claimed] == ["other"]
    assert store.read(lambda c: q.next_due(c, {"full"})) == 100 + LEASE  # "other"'s lease
    assert store.read(q.next_due) == 0  # "full" is due
    assert [i.lane for i in store.write(lambda c: q.claim(c, 100, 1, LEASE))] == ["full"]
