"""Shutdown's store operations: items still held are handed back, claimable at once; a write
whose caller gave up before it ran is skipped."""

import asyncio
import threading

from weir.platform.store import queue as q

from tests.support.store_kit import LEASE, Store, new_item

K = "kk" * 16


def test_held_items_are_claimable_at_once_after_hand_back(store: Store) -> None:
    for lane, score in (("lane-a", 0), ("lane-b", 5)):
        item = new_item(lane, score=score, limits=((K, 1),))
        store.write(lambda c, item=item: q.enqueue(c, item))
    [held] = store.write(lambda c: q.claim(c, 0, 10, LEASE))  # the key's one slot is taken
    assert store.write(lambda c: q.claim(c, 10, 10, LEASE)) == []
    assert store.write(lambda c: q.hand_back(c, [held], 10)) == 1
    again = store.write(lambda c: q.claim(c, 10, 10, LEASE))  # long before the lease ends
    assert len(again) == 1, "the slot was freed with the item"
    assert again[0].id == held.id and again[0].token != held.token, "the same item, first again"


def test_items_finished_or_taken_over_meanwhile_are_not_handed_back(store: Store) -> None:
    for lane in ("lane-a", "lane-b"):
        store.write(lambda c, lane=lane: q.enqueue(c, new_item(lane)))
    done, lost = store.write(lambda c: q.claim(c, 0, 10, LEASE))
    store.write(lambda c: q.finish(c, done, 1))
    [taken] = store.write(lambda c: q.claim(c, LEASE + 1, 10, LEASE))  # lease expired: retaken
    assert taken.id == lost.id
    assert store.write(lambda c: q.hand_back(c, [done, lost], LEASE + 2)) == 0
    store.write(lambda c: q.finish(c, taken, LEASE + 3))  # the new holder still owns it


def test_a_write_cancelled_before_it_ran_is_skipped_and_the_writer_lives_on(
    store: Store,
) -> None:
    gate = threading.Event()
    ran: list[str] = []

    def hold(_: object) -> None:
        gate.wait(10)  # keeps the writer busy while the next job is cancelled

    async def scenario() -> None:
        first = asyncio.ensure_future(store.db.write(hold))
        second = asyncio.ensure_future(store.db.write(lambda c: ran.append("second")))
        await asyncio.sleep(0)  # both jobs are queued
        second.cancel()
        await asyncio.sleep(0)
        gate.set()
        await first
        assert second.cancelled()
        await store.db.write(lambda c: ran.append("third"))

    asyncio.run(scenario())
    assert ran == ["third"]
