"""Waking the lanes parked on a capacity that was raised, without a thundering herd.

A lane parks on the one key it found full (`lanes.blocked_on`). When an operator raises a
capacity, each key it sizes has `capacity - in use` new free slots; only that many lanes parked
on the key are woken, those with the earliest head first (the claim's own order). Each woken
lane takes at least one slot when the claimer looks at it, so no lane is woken only to find
the key full and park again. The others stay parked: a slot released later wakes them as
usual, and a parked lane's safety net (the key's earliest lease end) still holds.

A lane parked with nothing due (its items are executing: a claim that fills a key parks its
lane at once) could not use a slot now, so it takes none of that count. But work enqueued into
it later would wait for a slot to be released while the key has room; so once the due lanes
have their share, the room left unparks such lanes, each due again when its head is (the next
enqueue moves it earlier, as for any lane that is not parked).
"""

from collections import defaultdict
from typing import Any

from sqlalchemy import Connection, exists, func, select, update
from weir.platform.store.engine import dialect
from weir.platform.store.engine.schema import lanes, queue, slots


def wake_for(conn: Connection, capacity_id: str, size: int, now: int) -> int:
    """Wake, per key sized by `capacity_id`, as many parked lanes as the key has free slots
    under `size`; how many lanes were woken."""
    # A lane's limits name the capacity id in its JSON ([[key, limit, capacity]]): the parked
    # lanes are few (one per waiting set of keys), read through the blocked_on index.
    due = exists().where(queue.c.lane == lanes.c.lane, queue.c.available_at <= now)
    parked = conn.execute(
        select(lanes.c.lane, lanes.c.blocked_on, due.label("due"))
        .where(lanes.c.blocked_on.is_not(None), lanes.c.limits.contains(f'"{capacity_id}"'))
        .order_by(lanes.c.head_score, lanes.c.lane)
    ).all()
    by_key: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for row in parked:
        by_key[str(row.blocked_on)][0 if row.due else 1].append(str(row.lane))
    woken = 0
    for key in sorted(k for k, (waiting, _) in by_key.items() if waiting):  # the claimers'
        # lock order, so nobody waits in a cycle; a claimer counting the key finishes first
        dialect.lock(conn, dialect.SLOT_KEY, key)
        used = conn.execute(
            select(func.count()).where(slots.c.key_hash == key, slots.c.expires_at > now)
        ).scalar_one()
        waiting, idle = by_key[key]
        free = max(0, size - int(used))
        chosen = waiting[:free]
        if chosen:
            _unpark(conn, chosen, now)
            woken += len(chosen)
        if idle and free > len(chosen):  # room left: later work need not wait for a release
            _unpark(conn, idle, _head_at(now))
    # A key no due lane waits for: its idle lanes, counted for nothing. One that is still full
    # costs a claim's look when work comes, which parks it again.
    idle_only = [lane for waiting, idle in by_key.values() if not waiting for lane in idle]
    for start in range(0, len(idle_only), _CHUNK):
        _unpark(conn, idle_only[start : start + _CHUNK], _head_at(now))
    if woken:
        dialect.notify(conn, dialect.WAKE)
    return woken


_CHUNK = 500  # lanes per statement: far below every backend's limit of bound values


def _unpark(conn: Connection, chosen: list[str], next_at: Any) -> None:
    conn.execute(
        update(lanes)
        .where(lanes.c.lane.in_(chosen), lanes.c.blocked_on.is_not(None))
        .values(blocked_on=None, next_at=next_at)
    )


# when a lane's earliest item is due (an executing item's: when its lease ends); a lane left
# with no item is looked at now, and removed by that look
def _head_at(now: int) -> Any:
    earliest = select(func.min(queue.c.available_at)).where(queue.c.lane == lanes.c.lane)
    return func.coalesce(earliest.scalar_subquery(), now)
