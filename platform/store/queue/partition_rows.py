"""Partition rows (the `lanes` table): create or move a partition's head, park it on a full key,
set it right from its items, delete it when empty; when the next one is due."""

from collections.abc import Collection
from typing import Any

from sqlalchemy import Connection, case, delete, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.store.engine import dialect
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import lanes, queue, slots
from weir.platform.store.queue.items import TIMER_LANE, NewItem, limits_json
from weir.platform.store.queue.partitions import not_skipped

_LANE = select(lanes.c.next_at, lanes.c.head_score, lanes.c.blocked_on).where(
    lanes.c.lane == _p("lane")
)
LANE_LOCKED = Fast(_LANE.with_for_update())
_UPDATE_LANE = update(lanes).where(lanes.c.lane == _p("lane"))
_UPDATE_LANE_HEAD = Fast(_UPDATE_LANE, ("next_at", "head_score", "blocked_on"))
_PARK_LANE = Fast(_UPDATE_LANE, ("blocked_on", "next_at"))


def _lane_upsert(ins: Any, smaller: Any) -> Fast:
    """Create the lane, or move its head earlier: the lowest score, and the earliest due time
    unless the lane is parked (its head still needs the key). One statement; a lane already
    right is not written. On PostgreSQL the upsert locks the row like `FOR UPDATE` did, and an
    insert racing a delete of the lane is retried by the database itself. A lane that does not
    name its function yet (made before migration 0012, or by an older process sharing the
    database) learns it, so that a claim skipping the function passes it over."""
    new = ins.excluded
    stmt = ins.on_conflict_do_update(
        index_elements=[lanes.c.lane],
        set_={
            "head_score": smaller(lanes.c.head_score, new.head_score),
            "next_at": case(
                (lanes.c.blocked_on.is_(None), smaller(lanes.c.next_at, new.next_at)),
                else_=lanes.c.next_at,
            ),
            "function_id": func.coalesce(lanes.c.function_id, new.function_id),
        },
        where=or_(
            new.head_score < lanes.c.head_score,
            lanes.c.blocked_on.is_(None) & (new.next_at < lanes.c.next_at),
            lanes.c.function_id.is_(None) & new.function_id.is_not(None),
        ),
    )
    return Fast(stmt, ("lane", "next_at", "head_score", "limits", "function_id"))


_TOUCH_LANE = {
    "sqlite": _lane_upsert(sqlite.insert(lanes), func.min),
    "postgresql": _lane_upsert(postgresql.insert(lanes), func.least),
}
_EARLIEST_SLOT_END = Fast(
    select(func.min(slots.c.expires_at)).where(
        slots.c.key_hash == _p("key"), slots.c.expires_at > _p("now")
    )
)
# After a claim leased items of a lane, the lane still has items (those at least): its head
# is read and written by one statement.
_HEAD_OF = (
    select(queue.c.available_at, queue.c.score)
    .where(queue.c.lane == lanes.c.lane)
    .order_by(queue.c.available_at)
    .limit(1)
)
MOVE_HEAD = Fast(
    update(lanes)
    .where(lanes.c.lane == _p("lane"))
    .values(
        next_at=_HEAD_OF.with_only_columns(queue.c.available_at).scalar_subquery(),
        head_score=_HEAD_OF.with_only_columns(queue.c.score).scalar_subquery(),
        blocked_on=None,
    )
)
PARK_AT_HEAD = Fast(
    update(lanes)
    .where(lanes.c.lane == _p("lane"))
    .values(
        next_at=_p("until"),
        head_score=_HEAD_OF.with_only_columns(queue.c.score).scalar_subquery(),
        blocked_on=_p("key"),
    )
)
_LANE_HEAD = Fast(
    select(queue.c.available_at, queue.c.score)
    .where(queue.c.lane == _p("lane"))
    .order_by(queue.c.available_at)
    .limit(1)
)
DELETE_LANE = Fast(delete(lanes).where(lanes.c.lane == _p("lane")))
_NEXT_DUE_QUERY = select(func.min(lanes.c.next_at))
_NEXT_DUE = Fast(_NEXT_DUE_QUERY)


def touch_lane(conn: Connection, item: NewItem) -> None:
    values = {
        "lane": item.lane,
        "next_at": item.available_at,
        "head_score": item.score,
        "limits": limits_json(item.limits),
        "function_id": None if item.lane == TIMER_LANE else item.function_id,
    }
    _TOUCH_LANE[conn.dialect.name].run(conn, values)


_PARKED_ON = select(lanes.c.blocked_on).where(lanes.c.lane == _p("lane"))


def parked_on(conn: Connection, lane: str) -> str | None:
    """The key a lane waits for a slot of, if it is parked."""
    found = conn.execute(_PARKED_ON, {"b_lane": lane}).scalar()
    return None if found is None else str(found)


def park(conn: Connection, lane: str, key: str, now: int) -> None:
    _PARK_LANE.run(
        conn, {"b_lane": lane, "blocked_on": key, "next_at": earliest_slot_end(conn, key, now)}
    )


def earliest_slot_end(conn: Connection, key: str, now: int) -> int:
    """The safety net of a parked lane: look again when the key's earliest slot would expire."""
    expiry = _EARLIEST_SLOT_END.scalar(conn, {"b_key": key, "b_now": now})
    return int(expiry) if expiry is not None else now


def refresh_lane(
    conn: Connection,
    lane: str,
    park_on: str | None = None,
    now: int = 0,
    slot_end: int | None = None,
) -> None:
    """Set the lane's head from its items, parked on `park_on` if given (until `slot_end`, when
    the caller knows when that key's earliest slot ends); removed if it has none."""
    if dialect.is_postgres(conn):
        # Lock the lane first: an enqueue into it waits, or sees it deleted and creates it anew
        # (SQLite's single writer already serializes them).
        LANE_LOCKED.first(conn, {"b_lane": lane})
    head = _LANE_HEAD.first(conn, {"b_lane": lane})
    if head is None:
        DELETE_LANE.run(conn, {"b_lane": lane})
        return
    values = {
        "b_lane": lane,
        "next_at": head.available_at,
        "head_score": head.score,
        "blocked_on": park_on,
    }
    if park_on is not None:
        values["next_at"] = (
            slot_end if slot_end is not None else earliest_slot_end(conn, park_on, now)
        )
    _UPDATE_LANE_HEAD.run(conn, values)


def _drop_if_empty(conn: Connection, lane: str) -> None:
    if own_head(conn, lane) is None:
        DELETE_LANE.run(conn, {"b_lane": lane})


def own_head(conn: Connection, lane: str) -> Any:
    """The lane's earliest item (due time, score), or None if it has none; on PostgreSQL the
    lane is locked first, as in `refresh_lane`, so an enqueue into it waits."""
    if dialect.is_postgres(conn):
        LANE_LOCKED.first(conn, {"b_lane": lane})
    return _LANE_HEAD.first(conn, {"b_lane": lane})


def next_due(conn: Connection, skip: Collection[str] = ()) -> int | None:
    """When the first lane of no function in `skip` is due (None: there is none)."""
    if skip:
        value = conn.execute(_NEXT_DUE_QUERY.where(not_skipped(skip))).scalar()
    else:
        value = _NEXT_DUE.scalar(conn)
    return None if value is None else int(value)
