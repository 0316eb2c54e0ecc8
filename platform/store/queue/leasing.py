"""Leasing due items of a partition: reading them in claim order and taking their slots and
fences."""

from typing import Any

from sqlalchemy import Connection, select, update
from weir.platform.store.engine import dialect
from weir.platform.store.engine.fast import Fast, off_index
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import queue
from weir.platform.store.flow import fences
from weir.platform.store.queue.items import Claimed, SlotLimit, new_token
from weir.platform.store.queue.slot_rows import take_slot

# A lane's due items in claim order. SQLite would take the index on (lane, available_at) and
# sort every due item of the lane for each claim: a cost that grows with the lane's backlog.
# So it looks at the first ITEMS_WINDOW items in claim order (those in flight, mostly), and
# sorts the lane's due items only when those held fewer than wanted (items a throttle deferred
# keep their score and wait at the front, not due). PostgreSQL keeps one statement and its
# planner's choice.
ITEMS_WINDOW = 64
_ITEM_ORDER = (queue.c.score, queue.c.id)
_DUE_ITEMS = Fast(  # PostgreSQL
    select(queue)
    .where(queue.c.lane == _p("lane"), queue.c.available_at <= _p("now"))
    .order_by(*_ITEM_ORDER)
    .limit(_p("limit"))
    .with_for_update(skip_locked=True)  # e.g. an expired lease its old holder is finishing
)
# the first ITEMS_WINDOW items in claim order, read from the index alone: many share a score
_FIRST_ITEMS = (
    select(queue.c.id).where(queue.c.lane == _p("lane")).order_by(*_ITEM_ORDER).limit(_p("window"))
)
_DUE_ITEMS_WALK = Fast(
    select(queue)
    .where(queue.c.id.in_(_FIRST_ITEMS), queue.c.available_at <= _p("now"))
    .order_by(*_ITEM_ORDER)
    .limit(_p("limit"))
)
_LANE_ITEMS_PAST = Fast(  # whether the lane holds more items than the window
    select(queue.c.id).where(queue.c.lane == _p("lane")).limit(1).offset(_p("window"))
)
_DUE_ITEMS_SORT = Fast(
    select(queue)
    .where(queue.c.lane == _p("lane"), queue.c.available_at <= _p("now"))
    .order_by(off_index(queue.c.score), queue.c.id)
    .limit(_p("limit"))
)
LEASE = Fast(
    update(queue)
    .where(queue.c.id == _p("id"))
    .values(available_at=_p("until"), lease_owner=_p("token"), dedupe=None, claimed_at=_p("now"))
)


def due_items(conn: Connection, lane: str, now: int, limit: int) -> list[Any]:
    params: dict[str, Any] = {"b_lane": lane, "b_now": now, "b_limit": limit}
    if dialect.is_postgres(conn):
        return _DUE_ITEMS.all(conn, params)
    found = _DUE_ITEMS_WALK.all(conn, {**params, "b_window": ITEMS_WINDOW})
    if len(found) >= limit:
        return found
    if _LANE_ITEMS_PAST.first(conn, {"b_lane": lane, "b_window": ITEMS_WINDOW}) is None:
        return found  # the window held every item of the lane
    return _DUE_ITEMS_SORT.all(conn, params)


def lease_row(
    conn: Connection,
    row: Any,
    payload: dict[str, Any],
    limits: tuple[SlotLimit, ...],
    now: int,
    lease: int,
    fenced: tuple[str, ...],
    slots_of: int | None = None,
) -> Claimed:
    """Lease the item and take a slot of each of its lane's keys (those of `slots_of`, a
    finished item, when given), and a new fence of each key in `fenced`: those whose live
    size, read under the key's lock, is 1 (one holder at a time; under a larger capacity
    holders overlap, and no token could tell an old one from a new one)."""
    token = new_token()
    until = now + lease
    LEASE.run(conn, {"b_id": row.id, "b_until": until, "b_token": token, "b_now": now})
    keys = tuple(limit.key for limit in limits)
    for key in keys:
        take_slot(conn, key, row.id, until, slots_of)
    return Claimed(
        id=row.id,
        kind=row.kind,
        run_id=row.run_id,
        function_id=row.function_id,
        step_id=row.step_id,
        attempt=row.attempt,
        payload=payload,
        lane=row.lane,
        token=token,
        keys=keys,
        claimed_at=now,
        fences=fences.take(conn, fenced) if fenced else {},
        series=row.series,
        limits=limits,
    )
