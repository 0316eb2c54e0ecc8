"""Reading FIFO lanes for people: the busy lanes of a scope, one lane, its line in order.

Every read is bounded by its page: busy lanes come from a partial index (lanes with a holder;
a lane with runs in line always has one), a lane's queue length is the counter its joins and
leaves keep (`fifo_lanes.queued`), its oldest waiting run is the first entry of its line by
primary key, and the line is paged by sequence number. No read counts or scans a line.
"""

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, select, tuple_
from weir.platform.foundation.record_type import record
from weir.platform.store.engine.schema import fifo_lanes, fifo_members, runs
from weir.platform.store.views import handed

FUNCTION_SCOPE = "fn:"  # the lanes of one function (no lane name)
NAME_SCOPE = "name:"  # the lanes every function naming the lane shares


def scope_of(function_id: str, name: str | None) -> str:
    """Whose lanes a function's runs join: its own, or those of the lane name it declares."""
    return f"{NAME_SCOPE}{name}" if name is not None else f"{FUNCTION_SCOPE}{function_id}"


@record
class RunBrief:
    run_id: str
    status: str | None  # None: the run is gone (deleted by retention)
    created_at: int | None


@record
class Member:
    seq: int  # the lane's own number: the line's order
    run: RunBrief


@record
class LaneRow:
    lane: str  # the lane's hash: how the API addresses it
    key: str  # the readable key value
    scope: str  # "" for lanes made before lanes recorded their scope
    fence: int  # the holder's token when there is a holder
    holder: RunBrief | None
    held_since: int | None  # None for lanes taken before the time was recorded
    queued: int
    oldest: Member | None  # the first run in line


def _first_in_line(column: Any) -> Any:
    """`column` of the lane's first run in line: one seek on the line's primary key."""
    m = fifo_members.c
    return (
        select(column).where(m.lane == fifo_lanes.c.lane).order_by(m.seq).limit(1)
    ).scalar_subquery()


_LANE = select(
    fifo_lanes.c.lane,
    fifo_lanes.c.key,
    fifo_lanes.c.scope,
    fifo_lanes.c.fence,
    fifo_lanes.c.holder,
    fifo_lanes.c.held_since,
    fifo_lanes.c.queued,
    _first_in_line(fifo_members.c.seq).label("oldest_seq"),
    _first_in_line(fifo_members.c.run_id).label("oldest_run"),
)


def busy_lanes(
    conn: Connection, scope: str | None, after: tuple[str, str] | None, limit: int
) -> list[LaneRow]:
    """Lanes with a holder, by (scope, lane hash), after the cursor `after`; every scope when
    `scope` is None."""
    query = _LANE.where(fifo_lanes.c.holder.is_not(None))  # the partial index's rule
    if scope is not None:
        query = query.where(fifo_lanes.c.scope == scope)
    if after is not None:
        query = query.where(tuple_(fifo_lanes.c.scope, fifo_lanes.c.lane) > tuple_(*after))
    query = query.order_by(fifo_lanes.c.scope, fifo_lanes.c.lane).limit(limit)
    return _rows(conn, conn.execute(query).all())


def lane(conn: Connection, lane_hash: str) -> LaneRow | None:
    found = _rows(conn, conn.execute(_LANE.where(fifo_lanes.c.lane == lane_hash)).all())
    return found[0] if found else None


def members(conn: Connection, lane_hash: str, after_seq: int | None, limit: int) -> list[Member]:
    """The runs in line behind the holder, first in line first (by primary key)."""
    m = fifo_members.c
    query = select(m.seq, m.run_id).where(m.lane == lane_hash)
    if after_seq is not None:
        query = query.where(m.seq > after_seq)
    rows = list(conn.execute(query.order_by(m.seq).limit(limit)))
    briefs = _briefs(conn, [str(r.run_id) for r in rows])
    return [Member(int(r.seq), briefs[str(r.run_id)]) for r in rows]


def _rows(conn: Connection, rows: Sequence[Any]) -> list[LaneRow]:
    ids = [str(r.holder) for r in rows if r.holder is not None]
    ids += [str(r.oldest_run) for r in rows if r.oldest_run is not None]
    briefs = _briefs(conn, ids)
    return [
        LaneRow(
            lane=str(r.lane),
            key=str(r.key),
            scope=str(r.scope),
            fence=int(r.fence),
            holder=None if r.holder is None else briefs[str(r.holder)],
            held_since=None if r.held_since is None else int(r.held_since),
            queued=max(0, int(r.queued)),
            oldest=None
            if r.oldest_run is None
            else Member(int(r.oldest_seq), briefs[str(r.oldest_run)]),
        )
        for r in rows
    ]


def _briefs(conn: Connection, run_ids: list[str]) -> dict[str, RunBrief]:
    """Status and creation time of each run, by primary key (a missing run: status None)."""
    found = {rid: RunBrief(rid, None, None) for rid in run_ids}
    if run_ids:
        query = select(runs.c.id, runs.c.status, runs.c.created_at).where(
            runs.c.id.in_(sorted(set(run_ids)))
        )
        rows = list(conn.execute(query))
        status = handed.current_statuses(conn, {str(r.id): str(r.status) for r in rows})
        for row in rows:
            found[str(row.id)] = RunBrief(str(row.id), status[str(row.id)], int(row.created_at))
    return found
