"""Lease upkeep: retry an item later, extend leases in flight, return them at shutdown or
at the start of a process that owns the store alone."""

from sqlalchemy import Connection, delete, update
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import lanes, queue, slots
from weir.platform.store.queue.items import Claimed, LeaseLost
from weir.platform.store.queue.partition_rows import refresh_lane
from weir.platform.store.queue.slot_rows import release_slots

_RETRY = Fast(
    update(queue)
    .where(queue.c.id == _p("id"), queue.c.lease_owner == _p("token"))
    .values(available_at=_p("at"), score=_p("at"), attempt=_p("attempt"), lease_owner=None)
)
_EXTEND_ITEM = Fast(
    update(queue)
    .where(queue.c.id == _p("id"), queue.c.lease_owner == _p("token"))
    .values(available_at=_p("until"))
)
# By (key, item), the primary key: by item alone would scan every held slot of every key.
_EXTEND_SLOT = Fast(
    update(slots)
    .where(slots.c.key_hash == _p("key"), slots.c.item_id == _p("id"))
    .values(expires_at=_p("until"))
)
_HAND_BACK = Fast(
    update(queue)
    .where(queue.c.id == _p("id"), queue.c.lease_owner == _p("token"))
    .values(available_at=_p("now"), lease_owner=None)
)


def retry(conn: Connection, item: Claimed, available_at: int, now: int) -> None:
    """Put a claimed item back for another attempt at `available_at`."""
    params = {
        "b_id": item.id,
        "b_token": item.token,
        "b_at": available_at,
        "b_attempt": item.attempt + 1,
    }
    if _RETRY.rowcount(conn, params) != 1:
        raise LeaseLost(f"queue item {item.id} is no longer held by this claim")
    release_slots(conn, item.id, item.keys, now)
    refresh_lane(conn, item.lane)


def extend(conn: Connection, items: list[Claimed], until: int) -> None:
    """Keep the leases (and slots) of items still being worked on."""
    for item in items:
        _EXTEND_ITEM.run(conn, {"b_id": item.id, "b_token": item.token, "b_until": until})
        for key in item.keys:
            _EXTEND_SLOT.run(conn, {"b_key": key, "b_id": item.id, "b_until": until})


def release_all_leases(conn: Connection, now: int) -> int:
    """At the start of a process that owns the store alone: nothing is in flight any more."""
    conn.execute(delete(slots))
    done = conn.execute(
        update(queue)
        .where(queue.c.lease_owner.is_not(None))
        .values(available_at=now, lease_owner=None)
    )
    conn.execute(update(lanes).values(next_at=now, blocked_on=None))
    return int(done.rowcount)


def hand_back(conn: Connection, items: list[Claimed], now: int) -> int:
    """A process shutting down returns the items it still holds: claimable at once by anyone,
    instead of after their leases run out. Items finished or taken over meanwhile are skipped."""
    returned = 0
    for item in items:
        params = {"b_id": item.id, "b_token": item.token, "b_now": now}
        if _HAND_BACK.rowcount(conn, params) == 1:
            returned += 1
            release_slots(conn, item.id, item.keys, now)
            refresh_lane(conn, item.lane)
    return returned
