"""Waking the lanes parked on a capacity that was raised, without a thundering herd.

A lane parks on the one key it found full (`lanes.blocked_on`). When an operator raises a
capacity, each key it sizes has `capacity - in use` new free slots; only that many lanes parked
on the key are woken, those with the earliest head first (the claim's own order). Each woken
lane takes at least one slot when the claimer looks at it, so no lane is woken only to find
the key full and park again. The others stay parked: a slot released later wakes them as
usual, and a parked lane's safety net (the key's earliest lease end) still holds.
"""

from collections import defaultdict

from sqlalchemy import Connection, exists, func, select, update
from weir.platform.store.engine import dialect
from weir.platform.store.engine.schema import lanes, queue, slots


def wake_for(conn: Connection, capacity_id: str, size: int, now: int) -> int:
    """Wake, per key sized by `capacity_id`, as many parked lanes as the key has free slots
    under `size`; how many lanes were woken."""
    # A lane's limits name the capacity id in its JSON ([[key, limit, capacity]]): the parked
    # lanes are few (one per waiting set of keys), read through the blocked_on index. A lane
    # parked with nothing due (its items are executing or wait for a later time) could not use
    # a slot now: waking it would leave the slot idle while a lane that can use it sleeps.
    due = exists().where(queue.c.lane == lanes.c.lane, queue.c.available_at <= now)
    parked = conn.execute(
        select(lanes.c.lane, lanes.c.blocked_on)
        .where(
            lanes.c.blocked_on.is_not(None),
            lanes.c.limits.contains(f'"{capacity_id}"'),
            due,
        )
        .order_by(lanes.c.head_score, lanes.c.lane)
    ).all()
    by_key: dict[str, list[str]] = defaultdict(list)
    for row in parked:
        by_key[str(row.blocked_on)].append(str(row.lane))
    woken = 0
    for key in sorted(by_key):  # the claimers' lock order, so nobody waits in a cycle
        dialect.lock(conn, dialect.SLOT_KEY, key)  # a claimer counting the key finishes first
        used = conn.execute(
            select(func.count()).where(slots.c.key_hash == key, slots.c.expires_at > now)
        ).scalar_one()
        chosen = by_key[key][: max(0, size - int(used))]
        if chosen:
            conn.execute(
                update(lanes)
                .where(lanes.c.lane.in_(chosen), lanes.c.blocked_on == key)
                .values(blocked_on=None, next_at=now)
            )
            woken += len(chosen)
    if woken:
        dialect.notify(conn, dialect.WAKE)
    return woken
