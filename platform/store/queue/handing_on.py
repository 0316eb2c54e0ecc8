"""Handing a finished item's slots straight to the next due item of its partition."""

from sqlalchemy import Connection
from weir.platform.store.engine import json_text
from weir.platform.store.flow import rolling_windows, start_throttle
from weir.platform.store.queue.items import Claimed
from weir.platform.store.queue.leasing import due_items, lease_row
from weir.platform.store.queue.partition_rows import own_head
from weir.platform.store.queue.partitions import due_before
from weir.platform.store.queue.slot_rows import OTHER_PARKED, free_slots, lock_keys, size_and_use


def hand_on(conn: Connection, item: Claimed, now: int, lease_ms: int) -> Claimed | None:
    """Pass the slots of `item`, finished with `keep_slots`, straight to the next due item of
    its lane, leased to the caller; or free them as `finish` would, and return None.

    A hot key's next run thus starts in the transaction that ends the last one, with no wake,
    claim and re-park of its lane in between. The slots go on only when the claim would have
    chosen that item too: no due work elsewhere is as old, no other lane is parked on one of
    the keys (the claim's order decides which waiting lane goes next), the keys still have
    room (a capacity lowered meanwhile holds new holders back), and the item passes its start
    gates. The lane's row stays as it is: its head can only have
    moved later, and a parked lane stays parked, with its slots still full."""
    if not item.keys:
        return None
    lock_keys(conn, item.keys)
    head = own_head(conn, item.lane)
    if head is not None and head.available_at <= now:
        nxt = _next_holder(conn, item, now, lease_ms)
        if nxt is not None:
            return nxt
    free_slots(conn, item.id, item.keys, now, item.lane if head is None else None)
    return None


def _next_holder(conn: Connection, item: Claimed, now: int, lease_ms: int) -> Claimed | None:
    rows = due_items(conn, item.lane, now, 1)
    if not rows or due_before(conn, now, rows[0].score):
        return None  # nothing due, or older (or as old) work that the claim takes first
    for key in item.keys:
        if OTHER_PARKED.first(conn, {"b_key": key, "b_lane": item.lane}) is not None:
            return None  # the claim decides, by score, which waiting lane goes first
    fenced = _room_kept(conn, item, now)
    if fenced is None:
        return None
    row = rows[0]
    payload = json_text.loads(row.payload)
    throttled = start_throttle.window(payload)
    if not rolling_windows.check(conn, row, payload, now, start_throttle.check, throttled).start:
        return None
    return lease_row(conn, row, payload, item.limits, now, lease_ms, fenced, slots_of=item.id)


def _room_kept(conn: Connection, item: Claimed, now: int) -> tuple[str, ...] | None:
    """Whether every key still has room for the slot `item` holds: not (None) if a capacity
    was lowered to what the other holders take (new holders wait; nobody's slot is revoked).
    If so, the keys whose live size is 1, whose next holder takes a fence."""
    fenced: list[str] = []
    for limit in item.limits:
        if limit.unlimited:
            continue
        size, used = size_and_use(conn, limit, now, other_than=item.id)
        if size > 0 and used >= size:
            return None
        if size == 1:
            fenced.append(limit.key)
    return tuple(fenced)
