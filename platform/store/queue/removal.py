"""Removing queued items: a finished run's, or one by its dedupe text."""

from sqlalchemy import Connection, delete, func, select
from weir.platform.foundation.vocabulary import QueueKind
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import queue

_DEDUPE = select(queue.c.id, queue.c.lane).where(queue.c.dedupe == _p("dedupe"))
_RUN_ITEMS = Fast(
    select(queue.c.id, queue.c.kind, queue.c.lease_owner, queue.c.available_at).where(
        queue.c.run_id == _p("run")
    )
)
_DELETE_ITEM = Fast(delete(queue).where(queue.c.id == _p("id")))


def remove_run_items(conn: Connection, run_id: str, keep: int | None, now: int) -> int | None:
    """Drop every queued item of a finished run (but the one finishing it); returns when the
    latest lease of its calls still in flight ends (None if none is), as `fifo.in_flight_until`
    would, from the same read (a laned run's end asks it next)."""
    # Items in flight stay: their holder finishes them (freeing their slots only when the call
    # really ends), sees the run has ended and moves it no further.
    # Their lanes stay as they are: removing items never makes a lane due too late (`finish`).
    latest: int | None = None
    for row in _RUN_ITEMS.all(conn, {"b_run": run_id}):
        if row.lease_owner is not None:
            if row.kind == QueueKind.EXEC:  # a leased item's lease ends at its available_at
                until = int(row.available_at)
                latest = until if latest is None else max(latest, until)
        elif row.id != keep:
            _DELETE_ITEM.run(conn, {"b_id": row.id})
    return latest


def remove_by_dedupe(conn: Connection, dedupe: str) -> None:
    row = conn.execute(_DEDUPE, {"b_dedupe": dedupe}).first()
    if row is not None:
        _DELETE_ITEM.run(conn, {"b_id": row.id})  # its lane stays, as in `finish`


_IN_FLIGHT_UNTIL = select(func.max(queue.c.available_at)).where(
    queue.c.run_id == _p("run"), queue.c.lease_owner.is_not(None), queue.c.kind == QueueKind.EXEC
)


def in_flight_until(conn: Connection, run_id: str) -> int | None:
    """When the latest lease on the run's claimed calls ends; None if none is in flight."""
    value = conn.execute(_IN_FLIGHT_UNTIL, {"b_run": run_id}).scalar()
    return None if value is None else int(value)
