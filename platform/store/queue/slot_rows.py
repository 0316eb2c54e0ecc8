"""Concurrency slots (the `slots` table): count a key's slots in use against its size, take,
move and free them, waking the partitions parked on a key that has room again."""

from typing import Any

from sqlalchemy import Connection, delete, exists, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.store.engine import dialect
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import lanes, slots
from weir.platform.store.flow import capacity
from weir.platform.store.queue.items import SlotLimit
from weir.platform.store.queue.partition_rows import DELETE_LANE, own_head

_DELETE_SLOT = Fast(delete(slots).where(slots.c.key_hash == _p("key"), slots.c.item_id == _p("id")))
# A finished item's slot handed to the next holder (`hand_on`): the same row, a new item;
# not if the new holder still has a row of its own (a lapsed lease: the claim renews those).
_HELD = slots.alias("held")
_STALE_ROW = select(_HELD.c.item_id).where(
    _HELD.c.key_hash == _p("key"), _HELD.c.item_id == _p("new")
)
_MOVE_SLOT = Fast(
    update(slots)
    .where(slots.c.key_hash == _p("key"), slots.c.item_id == _p("old"), ~exists(_STALE_ROW))
    .values(item_id=_p("new"), expires_at=_p("until"))
)
# A key's slots in use but those of one item (0: none is left out)
_USED_BUT = select(func.count()).where(
    slots.c.key_hash == _p("key"), slots.c.expires_at > _p("now"), slots.c.item_id != _p("id")
)
_IN_USE_BY_OTHERS = Fast(_USED_BUT)
# ... with the key's stored capacity (NULL: none stored, the declared limit holds): the claim
# reads both under the key's lock.
_SIZE_AND_USE = Fast(
    select(
        capacity.stored_size(_p("cap")).label("stored"),
        _USED_BUT.scalar_subquery().label("used"),
    )
)
OTHER_PARKED = Fast(
    select(lanes.c.lane).where(lanes.c.blocked_on == _p("key"), lanes.c.lane != _p("lane")).limit(1)
)


def _slot_upsert(stmt: Any) -> Fast:
    """Take an item's slot of a key, or renew it (an item claimed again after its lease ran
    out still has its row): one statement."""
    stmt = stmt.on_conflict_do_update(
        index_elements=[slots.c.key_hash, slots.c.item_id],
        set_={"expires_at": stmt.excluded.expires_at},
    )
    return Fast(stmt, ("key_hash", "item_id", "expires_at"))


_TAKE_SLOT = {
    "sqlite": _slot_upsert(sqlite.insert(slots)),
    "postgresql": _slot_upsert(postgresql.insert(slots)),
}
_WAKE_PARKED = Fast(
    update(lanes).where(lanes.c.blocked_on == _p("key")).values(blocked_on=None, next_at=_p("now"))
)


def in_use(conn: Connection, key: str, now: int) -> int:
    """The key's slots taken now."""
    return size_and_use(conn, SlotLimit(key, 0), now)[1]


def size_and_use(
    conn: Connection, limit: SlotLimit, now: int, other_than: int | None = None
) -> tuple[int, int]:
    """The key's size (its stored capacity, if any, holds over the declared limit) and its
    slots taken (but those of item `other_than`): one statement for both."""
    params: dict[str, Any] = {"b_key": limit.key, "b_now": now, "b_id": other_than or 0}
    if not limit.capacity:
        return limit.limit, int(_IN_USE_BY_OTHERS.scalar(conn, params))
    row = _SIZE_AND_USE.first(conn, {**params, "b_cap": limit.capacity})  # always one row
    return (limit.limit if row.stored is None else int(row.stored)), int(row.used)


def take_slot(conn: Connection, key: str, item_id: int, until: int, slots_of: int | None) -> None:
    if slots_of is not None:  # the finished item's row becomes the new holder's
        params = {"b_key": key, "b_old": slots_of, "b_new": item_id, "b_until": until}
        if _MOVE_SLOT.rowcount(conn, params) == 1:
            return
        _DELETE_SLOT.run(conn, {"b_key": key, "b_id": slots_of})
    take = _TAKE_SLOT[conn.dialect.name]
    take.run(conn, {"key_hash": key, "item_id": item_id, "expires_at": until})


def release_slots(
    conn: Connection, item_id: int, keys: tuple[str, ...], now: int, own_lane: str | None = None
) -> None:
    """Free the item's slots and wake the lanes parked on them. `own_lane`: the finished
    item's lane, deleted here if that emptied it (a keyed lane is parked on the key its last
    item filled: waking it would only cost a claim's look to find it empty)."""
    if not keys:
        return
    lock_keys(conn, keys)  # a claimer counting the key finishes first, parking included
    empty = own_lane is not None and own_head(conn, own_lane) is None
    free_slots(conn, item_id, keys, now, own_lane if empty else None)


def lock_keys(conn: Connection, keys: tuple[str, ...]) -> None:
    for key in sorted(keys):
        dialect.lock(conn, dialect.SLOT_KEY, key)


def free_slots(
    conn: Connection, item_id: int, keys: tuple[str, ...], now: int, drop: str | None
) -> None:
    """Delete the item's slots (its keys locked), the lane `drop` (found empty), and wake the
    lanes parked on the keys."""
    for key in keys:  # by (key, item), the primary key: by item alone scans every slot
        _DELETE_SLOT.run(conn, {"b_key": key, "b_id": item_id})
    if drop is not None:
        DELETE_LANE.run(conn, {"b_lane": drop})
    woken = 0
    for key in keys:  # wake the lanes parked on a key that now has room
        woken += _WAKE_PARKED.rowcount(conn, {"b_key": key, "b_now": now})
    if woken:
        dialect.notify(conn, dialect.WAKE)
