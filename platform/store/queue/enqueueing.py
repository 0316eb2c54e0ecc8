"""Adding items: queued for a claim, already leased to the caller, or made of a finished
call's own row."""

from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, exists, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.store.engine import dialect, json_text
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import queue
from weir.platform.store.queue.finishing import finish
from weir.platform.store.queue.items import NO_PAYLOAD, Claimed, NewItem, new_token
from weir.platform.store.queue.leasing import LEASE
from weir.platform.store.queue.partition_rows import touch_lane

# Statements are built once: building a SQLAlchemy expression costs more than executing it.
# An item whose dedupe text is queued already is not added: the unique index says so in the
# same statement (NULL dedupes never conflict).
_ITEM_COLUMNS = (
    "kind",
    "run_id",
    "function_id",
    "step_id",
    "attempt",
    "available_at",
    "score",
    "lane",
    "payload",
    "dedupe",
    "created_at",
)
_INSERT_ITEM = {
    "sqlite": Fast(
        sqlite.insert(queue).on_conflict_do_nothing().returning(queue.c.id), _ITEM_COLUMNS
    ),
    "postgresql": Fast(
        postgresql.insert(queue).on_conflict_do_nothing().returning(queue.c.id), _ITEM_COLUMNS
    ),
}
# An item inserted already leased (`enqueue_claimed`), in one statement: no dedupe of its own
# (a new item of the same name may be queued while it is in flight), and not inserted if an
# item with the dedupe it was asked for is queued. On PostgreSQL that check could race another
# transaction's insert, which only the unique index stops: items with a dedupe there take the
# insert and then the lease.
_LEASED_COLUMNS = (*(c for c in _ITEM_COLUMNS if c != "dedupe"), "lease_owner", "claimed_at")
_INSERT_LEASED = Fast(
    insert(queue)
    .from_select(
        list(_LEASED_COLUMNS),
        select(*(_p(c) for c in _LEASED_COLUMNS)).where(
            ~exists().where(queue.c.dedupe == _p("dedupe"))
        ),
    )
    .returning(queue.c.id)
)
_INSERT_LEASED_PG = Fast(postgresql.insert(queue).returning(queue.c.id), _LEASED_COLUMNS)
# A run's finished call becomes its next call, leased anew (`enqueue_in_place`): one row
# rewritten instead of one deleted and one inserted, each with its four indexes.
_REUSE_WHERE = (
    queue.c.id == _p("id"),
    queue.c.lease_owner == _p("old_token"),
    ~exists().where(queue.c.dedupe == _p("dedupe")),
)
_REUSE_VALUES = {
    "step_id": _p("step_id"),
    "attempt": _p("attempt"),
    "available_at": _p("until"),
    "score": _p("score"),
    "payload": _p("payload"),
    "created_at": _p("now"),
    "lease_owner": _p("token"),
    "claimed_at": _p("now"),
    "series": queue.c.series + 1,
}
_REUSE = Fast(update(queue).where(*_REUSE_WHERE).values(_REUSE_VALUES))
# The same where the lane needs no change: it was right for the row as it stood (looked at no
# later than its due time, ordered no later than its score), so it is right for the row made
# no earlier and no lower.
_REUSE_SAME_LANE = Fast(
    update(queue)
    .where(*_REUSE_WHERE, queue.c.available_at <= _p("until"), queue.c.score <= _p("score"))
    .values(_REUSE_VALUES)
)


def enqueue(conn: Connection, item: NewItem) -> int | None:
    """Add an item; an item whose `dedupe` text is already queued is not added again."""
    item_id = _INSERT_ITEM[conn.dialect.name].scalar(conn, _row(item))
    if item_id is None:
        return None
    touch_lane(conn, item)
    dialect.notify(conn, dialect.WAKE)  # other processes' schedulers may sleep past it
    return int(item_id)


def enqueue_claimed(conn: Connection, item: NewItem, now: int, lease_ms: int) -> Claimed | None:
    """Add an item already leased to the caller, who works on it at once: the transaction that
    makes a run's next call also claims it, with no claim of its own. None if an item with the
    same `dedupe` is queued already (that one goes the usual way). Only for items that need no
    concurrency slot and no start throttle (the claim decides those)."""
    if item.limits or item.payload:
        raise ValueError("an item with concurrency limits or a start throttle must be claimed")
    until, token = now + lease_ms, new_token()
    item_id = _insert_leased(conn, item, until, token, now)
    if item_id is None:
        return None
    # The lane must know the item, to be looked at when the lease would run out; never earlier
    # than it needs (an earlier look would only find the item leased).
    touch_lane(conn, replace(item, available_at=until))
    return Claimed(
        id=int(item_id),
        kind=item.kind,
        run_id=item.run_id,
        function_id=item.function_id,
        step_id=item.step_id,
        attempt=item.attempt,
        payload={},
        lane=item.lane,
        token=token,
        keys=(),
        claimed_at=now,
    )


def enqueue_in_place(
    conn: Connection, done: Claimed, item: NewItem, now: int, lease_ms: int
) -> Claimed | None:
    """`enqueue_claimed` for the next call of `done`'s run, made of `done`'s own row: the
    finished call is gone and the new one leased to the caller in one statement. `item` must
    be a call of the same run and lane as `done`, needing no slot or throttle, as
    `enqueue_claimed` requires, and `done` must hold no slots. None if an item with the same
    `dedupe` is queued already: `done` is then finished, and the new item goes the usual way.
    Raises LeaseLost as `finish` does."""
    if not _takes_row(done, item):
        raise ValueError("only a slotless call of the same run and lane takes a finished row")
    until, token = now + lease_ms, new_token()
    values = {
        "b_id": done.id,
        "b_old_token": done.token,
        "b_dedupe": item.dedupe,
        "b_step_id": item.step_id,
        "b_attempt": item.attempt,
        "b_until": until,
        "b_score": item.score,
        "b_payload": NO_PAYLOAD,
        "b_now": now,
        "b_token": token,
    }
    if _REUSE_SAME_LANE.rowcount(conn, values) != 1:
        if _REUSE.rowcount(conn, values) != 1:
            finish(conn, done, now)  # lost (raises), or the dedupe is queued: done ends here
            return None
        # as `enqueue_claimed`: the lane is looked at no later than the lease would run out
        touch_lane(conn, replace(item, available_at=until))
    return replace(
        done,
        step_id=item.step_id,
        attempt=item.attempt,
        payload={},
        token=token,
        claimed_at=now,
        series=done.series + 1,
    )


def _takes_row(done: Claimed, item: NewItem) -> bool:
    """`item` may take `done`'s row: a call of the same run and lane, and neither holds or
    needs a slot or a start throttle."""
    slotless = not (item.limits or item.payload or done.keys)
    return slotless and done.run_id == item.run_id and done.lane == item.lane


def _insert_leased(conn: Connection, item: NewItem, until: int, token: str, now: int) -> Any:
    """The new item's id, leased as a claim leases it; None if its dedupe is queued already."""
    row = _row(item) | {"available_at": until}
    leased = {**row, "lease_owner": token, "claimed_at": now}  # its `dedupe`: only checked
    if not dialect.is_postgres(conn):
        return _INSERT_LEASED.scalar(conn, {f"b_{key}": value for key, value in leased.items()})
    if item.dedupe is None:
        return _INSERT_LEASED_PG.scalar(conn, leased)
    item_id = _INSERT_ITEM[conn.dialect.name].scalar(conn, row)
    if item_id is not None:
        LEASE.run(conn, {"b_id": item_id, "b_until": until, "b_token": token, "b_now": now})
    return item_id


def _row(item: NewItem) -> dict[str, Any]:
    return {
        "kind": item.kind,
        "run_id": item.run_id,
        "function_id": item.function_id,
        "step_id": item.step_id,
        "attempt": item.attempt,
        "available_at": item.available_at,
        "score": item.score,
        "lane": item.lane,
        "payload": json_text.dumps(item.payload),
        "dedupe": item.dedupe,
        "created_at": item.available_at,
    }
