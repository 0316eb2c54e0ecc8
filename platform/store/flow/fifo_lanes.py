"""FIFO lanes in the store: who holds each busy lane, the runs queued behind it, and its
fencing token.

A run that joins a free lane holds it at once; otherwise it is numbered (`next_seq`, taken
under the lane row's lock, so the numbers follow commit order: two producers cannot interleave
a lane) and waits in `fifo_members` without any queue item, so queued members cost the claimer
nothing. When the holder ends, the member with the lowest number becomes the holder in the
same transaction, with a higher fence.

A lane's row lives only while the lane is busy: the holder that leaves an empty line deletes
it, so the table holds the busy lanes, not every lane value ever used (a lane per customer or
order would otherwise grow it forever, and its pages with it). A lane taken again must still
get a fence above every earlier holder's, so fences come from a store-wide counter that only
goes up: on SQLite the `fences` row LANE_COUNTER, raised to a deleted lane's last fence and
read (plus one) by the lane's next first holder; within a busy spell a handoff adds one. On
PostgreSQL every new holder draws from the sequence FIFO_FENCES while it holds the lane
row's lock, so a later holder of a lane always draws later.
"""

from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    case,
    delete,
    exists,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import QueueKind
from weir.platform.store.engine import dialect, json_text
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import FIFO_FENCES, fences, fifo_lanes, fifo_members, queue

LANE_KEY = "lane"  # a run's `keys` name its lane: {"key": text, "hash": lane, "fence": n}
# The SQLite counter's row in `fences`, whose other scopes are 64-digit hashes: no clash.
LANE_COUNTER = "fifo-lanes"


_JOIN_COLUMNS = ("lane", "key", "holder", "next_seq", "scope", "held_since", "queued")


_COUNTED = select(fences.c.value).where(fences.c.scope == LANE_COUNTER).scalar_subquery()


def _join_statement(dialect: Any) -> Fast:
    """One upsert: create the lane held by the run, or take a free lane, or take the next
    number in line (the row stays locked until the transaction ends), returning the result.
    A created lane's fence: on SQLite the counter plus one; on PostgreSQL drawn once the row
    is ours (`_DRAW`). Since 0018 no lane row is left free; one found so would be taken as
    a new lane is, rather than leave its joiners waiting behind no holder."""
    fence = func.coalesce(_COUNTED, 0) + 1 if dialect is sqlite else literal(0, BigInteger)
    lanes = dialect.insert(fifo_lanes).values(fence=fence)
    free = fifo_lanes.c.holder.is_(None)
    upsert = lanes.on_conflict_do_update(
        index_elements=[fifo_lanes.c.lane],
        set_={
            "holder": case((free, lanes.excluded.holder), else_=fifo_lanes.c.holder),
            "fence": case((free, fifo_lanes.c.fence + 1), else_=fifo_lanes.c.fence),
            "next_seq": case((free, fifo_lanes.c.next_seq), else_=fifo_lanes.c.next_seq + 1),
            # for the lane view (store/views/fifo_lanes.py)
            "held_since": case((free, lanes.excluded.held_since), else_=fifo_lanes.c.held_since),
            "queued": case((free, fifo_lanes.c.queued), else_=fifo_lanes.c.queued + 1),
            "scope": lanes.excluded.scope,
        },
    ).returning(fifo_lanes.c.holder, fifo_lanes.c.fence, fifo_lanes.c.next_seq)
    return Fast(upsert, _JOIN_COLUMNS)


_JOIN = {"sqlite": _join_statement(sqlite), "postgresql": _join_statement(postgresql)}
_NEXT_FENCE = FIFO_FENCES.next_value()  # PostgreSQL only
_DRAW = Fast(
    update(fifo_lanes)
    .where(fifo_lanes.c.lane == _p("lane"))
    .values(fence=_NEXT_FENCE)
    .returning(fifo_lanes.c.fence)
)
# Each laned run joins and leaves a lane: these run on the driver's cursor (store/engine/fast.py).
_HOLD = Fast(
    update(fifo_lanes)
    .where(fifo_lanes.c.lane == _p("lane"))
    .values(
        holder=_p("holder"),
        fence=_NEXT_FENCE,
        held_since=_p("now"),
        queued=fifo_lanes.c.queued - 1,  # the new holder came from the line
    )
    .returning(fifo_lanes.c.fence)
)
# Locks the lane row whoever leaves (so leaving runs and joining runs of a lane take turns on
# PostgreSQL), and ends the hold if the run is the holder: the holder left is NULL then.
_LET_GO = Fast(
    update(fifo_lanes)
    .where(fifo_lanes.c.lane == _p("lane"))
    .values(holder=case((fifo_lanes.c.holder == _p("run"), None), else_=fifo_lanes.c.holder))
    .returning(fifo_lanes.c.holder)
)
_ADD_MEMBER = Fast(insert(fifo_members), ("lane", "seq", "run_id", "start_at", "payload"))
_FIRST_SEQ = (
    select(fifo_members.c.seq)
    .where(fifo_members.c.lane == _p("lane"))
    .order_by(fifo_members.c.seq)
    .limit(1)
    .scalar_subquery()
)
_POP_FIRST = Fast(
    delete(fifo_members)
    .where(fifo_members.c.lane == _p("lane"), fifo_members.c.seq == _FIRST_SEQ)
    .returning(fifo_members.c.run_id, fifo_members.c.start_at, fifo_members.c.payload)
)
# SQLite's single writer: nobody joins the line while the holder leaves, so the holder that
# leaves an empty line deletes the lane at once (`_FREE`), and otherwise hands it to the first
# in line in one update (then that member's row goes). On PostgreSQL the line is read by a
# statement of its own once the lane's lock is taken: a subquery would read the line as it
# stood before the wait, missing a run queued meanwhile.
_IN_LINE = exists().where(fifo_members.c.lane == _p("lane"))
_HELD_BY_RUN = (fifo_lanes.c.lane == _p("lane"), fifo_lanes.c.holder == _p("run"))
_FREE = Fast(delete(fifo_lanes).where(*_HELD_BY_RUN, ~_IN_LINE).returning(fifo_lanes.c.fence))
_PASS_ON = Fast(
    update(fifo_lanes)
    .where(*_HELD_BY_RUN, _IN_LINE)
    .values(
        holder=select(fifo_members.c.run_id)
        .where(fifo_members.c.lane == _p("lane"))
        .order_by(fifo_members.c.seq)
        .limit(1)
        .scalar_subquery(),
        fence=fifo_lanes.c.fence + 1,
        held_since=_p("now"),
        queued=fifo_lanes.c.queued - 1,
    )
    .returning(fifo_lanes.c.holder, fifo_lanes.c.fence)
)
_TAKE_MEMBER = Fast(
    delete(fifo_members)
    .where(fifo_members.c.lane == _p("lane"), fifo_members.c.run_id == _p("run"))
    .returning(fifo_members.c.start_at, fifo_members.c.payload)
)
_DROP_RUN = Fast(delete(fifo_members).where(fifo_members.c.run_id == _p("run")))
_DEQUEUED = Fast(
    update(fifo_lanes).where(fifo_lanes.c.lane == _p("lane")).values(queued=fifo_lanes.c.queued - 1)
)
# PostgreSQL: the last holder of an empty line takes the lane's row away (and with it the busy
# index entry). On SQLite `_FREE` does, and `_KEEP_FENCE` then raises the counter.
_DROP_LANE = Fast(delete(fifo_lanes).where(fifo_lanes.c.lane == _p("lane")))


def _keep_statement() -> Fast:
    counter = sqlite.insert(fences)
    raised = func.max(fences.c.value, counter.excluded.value)  # SQLite's scalar max
    keep = counter.on_conflict_do_update(index_elements=[fences.c.scope], set_={"value": raised})
    return Fast(keep, ("scope", "value"))


_KEEP_FENCE = _keep_statement()
_HOLDER = Fast(select(fifo_lanes.c.holder).where(fifo_lanes.c.lane == _p("lane")))
_IN_FLIGHT = Fast(
    select(func.max(queue.c.available_at)).where(
        queue.c.run_id == _p("run"),
        queue.c.lease_owner.is_not(None),
        queue.c.kind == QueueKind.EXEC.value,
    )
)
_FENCE = Fast(
    select(fifo_lanes.c.fence).where(
        fifo_lanes.c.lane == _p("lane"), fifo_lanes.c.holder == _p("run")
    )
)


@record
class Joined:
    """A run's place in its lane: it holds the lane (with its fence), or waits behind `holder`."""

    holder: str
    fence: int | None  # set when the run itself became the holder

    @property
    def holds(self) -> bool:
        return self.fence is not None


@record
class Handoff:
    """The run that has just been given the lane, and what its first call needs."""

    run_id: str
    fence: int
    start_at: int
    payload: dict[str, Any]


def join(
    conn: Connection,
    lane: str,
    key: str,
    run_id: str,
    start_at: int,
    payload: dict[str, Any],
    *,
    scope: str = "",
    now: int | None = None,
) -> Joined:
    """Put a new run in its lane: holder if the lane is free, else last in line. `scope` says
    whose lanes these are (`lane_reads.scope_of`); `now` is when a free lane is taken."""
    new = {
        "lane": lane,
        "key": key,
        "holder": run_id,
        "next_seq": 0,
        "scope": scope,
        "held_since": now,
        "queued": 0,
    }
    row = _JOIN[conn.dialect.name].first(conn, new)  # waits for a producer ahead
    if row.holder == run_id:
        if dialect.is_postgres(conn):
            return Joined(holder=run_id, fence=int(_DRAW.scalar(conn, {"b_lane": lane})))
        return Joined(holder=run_id, fence=int(row.fence))
    member = {
        "lane": lane,
        "seq": int(row.next_seq) - 1,  # the number it has just taken
        "run_id": run_id,
        "start_at": start_at,
        "payload": json_text.dumps(payload),
    }
    _ADD_MEMBER.run(conn, member)
    return Joined(holder=str(row.holder), fence=None)


def holder(conn: Connection, lane: str) -> str | None:
    value = _HOLDER.scalar(conn, {"b_lane": lane})
    return None if value is None else str(value)


def leave(conn: Connection, lane: str, run_id: str, now: int | None = None) -> Handoff | None:
    """An ended run leaves its lane. If it held the lane, the next run in line gets it (and a
    new fence), or the lane is free; a run that ended while queued just leaves the line."""
    if not dialect.is_postgres(conn):
        return _pass_on(conn, lane, run_id, now)
    row = _LET_GO.first(conn, {"b_lane": lane, "b_run": run_id})
    if row is None or row.holder is not None:  # not the holder
        _leave_line(conn, lane, run_id)
        return None
    nxt = _POP_FIRST.first(conn, {"b_lane": lane})
    if nxt is None:
        _DROP_LANE.run(conn, {"b_lane": lane})  # nobody in line: the lane is free
        return None
    hold = {"b_lane": lane, "b_holder": nxt.run_id, "b_now": now}
    fence = _HOLD.scalar(conn, hold)
    return Handoff(str(nxt.run_id), int(fence), int(nxt.start_at), json_text.loads(nxt.payload))


def _pass_on(conn: Connection, lane: str, run_id: str, now: int | None) -> Handoff | None:
    """`leave` where one writer has the store (see `_FREE`)."""
    freed = _FREE.first(conn, {"b_lane": lane, "b_run": run_id})
    if freed is not None:  # it held the lane, and nobody is in line: the lane is free
        _KEEP_FENCE.run(conn, {"scope": LANE_COUNTER, "value": int(freed.fence)})
        return None
    row = _PASS_ON.first(conn, {"b_lane": lane, "b_run": run_id, "b_now": now})
    if row is None:  # not the holder
        _leave_line(conn, lane, run_id)
        return None
    nxt = _TAKE_MEMBER.first(conn, {"b_lane": lane, "b_run": row.holder})
    return Handoff(str(row.holder), int(row.fence), int(nxt.start_at), json_text.loads(nxt.payload))


def _leave_line(conn: Connection, lane: str, run_id: str) -> None:
    """A run that ended while queued leaves the line (if it is in it)."""
    if _DROP_RUN.rowcount(conn, {"b_run": run_id}):
        _DEQUEUED.run(conn, {"b_lane": lane})


def in_flight_until(conn: Connection, run_id: str) -> int | None:
    """When the latest lease on the run's claimed calls ends; None if none is in flight (the
    statement is built once: this runs at the end of every laned run)."""
    value = _IN_FLIGHT.scalar(conn, {"b_run": run_id})
    return None if value is None else int(value)


def fence(conn: Connection, lane: str, run_id: str) -> int | None:
    """The lane's fencing token if `run_id` holds the lane; None otherwise."""
    value = _FENCE.scalar(conn, {"b_lane": lane, "b_run": run_id})
    return None if value is None else int(value)


def run_fences(keys: dict[str, Any]) -> dict[str, int]:
    """The fencing tokens a run holds, by scope, as its keys record them ({} if none): the
    fence is written on the run in the transaction that gives it the lane."""
    lane = keys.get(LANE_KEY)
    token = lane.get("fence") if isinstance(lane, dict) else None
    return {LANE_KEY: int(token)} if isinstance(token, int) else {}
