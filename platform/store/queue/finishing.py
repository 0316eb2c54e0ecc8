"""Finishing a claimed item: removed with its slots freed, unless the caller hands them on."""

from sqlalchemy import Connection, delete
from weir.platform.store.engine import dialect
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import queue
from weir.platform.store.queue.items import Claimed, LeaseLost
from weir.platform.store.queue.partition_rows import LANE_LOCKED
from weir.platform.store.queue.slot_rows import lock_keys, release_slots

_FINISH = Fast(delete(queue).where(queue.c.id == _p("id"), queue.c.lease_owner == _p("token")))


def finish(conn: Connection, item: Claimed, now: int, *, keep_slots: bool = False) -> None:
    """Remove a claimed item and free its slots; raises LeaseLost if it is no longer ours.
    `keep_slots`: the caller passes them on with `hand_on` in this transaction instead.

    The lane is left as it is: its `next_at` was at most this item's lease end, and removing
    an item can only move the true head later, so the lane is never looked at too late. An
    emptied lane without keys is deleted by the claim that next finds it empty (one look),
    rather than by two more statements on every finished item; one with keys, here (it
    would otherwise be woken, only to be looked at and found empty)."""
    if _FINISH.rowcount(conn, {"b_id": item.id, "b_token": item.token}) != 1:
        raise LeaseLost(f"queue item {item.id} is no longer held by this claim")
    if not keep_slots:
        release_slots(conn, item.id, item.keys, now, own_lane=item.lane)
    elif item.keys and dialect.is_postgres(conn):
        # The locks `hand_on` takes, taken now in the order every release takes them (keys,
        # then the lane): the transition may lock the lane meanwhile (queuing the run's next
        # call), and the keys after it would be the reverse order of another process's release.
        lock_keys(conn, item.keys)
        LANE_LOCKED.first(conn, {"b_lane": item.lane})
