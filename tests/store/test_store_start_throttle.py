"""The throttle checked on the start itself, at claim: a backlog whose reserved slots all lie
in the past (a restart, a stalled scheduler) still starts at the throttle's rate, in order,
also when several processes claim from one store."""

import itertools
from functools import partial

from weir.platform.gates.throttle import ThrottleConfig
from weir.platform.store import queue as q
from weir.platform.store import start_throttle

from tests.support.store_kit import Store, claim_from_two_processes, new_item

LIMIT, PERIOD = 10, 1_000  # one start every 100 ms
THROTTLE = start_throttle.payload(ThrottleConfig(PERIOD, LIMIT), "k", "ab" * 16)


def stale_backlog(store: Store, count: int) -> None:
    """`count` start items whose slots (100 ms apart) have long passed."""
    for i in range(count):
        item = new_item("lane-t", score=100 * i, available_at=100 * i, payload=THROTTLE)
        store.write(partial(q.enqueue, item=item))


def test_a_stale_backlog_starts_one_per_interval_in_order(store: Store) -> None:
    stale_backlog(store, 5)
    now = 60_000
    first = store.write(lambda c: q.claim(c, now, 10, 10**9))
    assert [item.attempt for item in first] == [0]
    rows = store.rows("SELECT score, available_at, attempt FROM queue ORDER BY score")
    assert rows[1:] == [(100 * i, now + 100 * i, 0) for i in range(1, 5)]  # no attempt burnt
    assert store.write(lambda c: q.claim(c, now + 99, 10, 10**9)) == []
    [second] = store.write(lambda c: q.claim(c, now + 100, 10, 10**9))
    assert second.id == first[0].id + 1


def test_two_processes_claiming_one_backlog_keep_the_interval(store: Store) -> None:
    total = 30
    stale_backlog(store, total)
    starts = claim_from_two_processes(
        store, total, start=60_000, step=5, max_items=8, lease_ms=10**9, tries=2_000
    )
    assert len(starts) == total
    assert len({item_id for _, item_id in starts}) == total  # each started once
    starts.sort()
    times = [at for at, _ in starts]
    assert all(b - a >= PERIOD // LIMIT for a, b in itertools.pairwise(times)), times
    assert [item_id for _, item_id in starts] == sorted(item_id for _, item_id in starts)
