"""Which queue lanes a claim looks at: the due ones (`next_at <= now`), lowest head score first.

Two ways to find them, and neither alone is cheap everywhere:
- by due time (the index on `next_at`): every due lane is read and sorted by head score, so a
  claim of one item costs as much as the backlog is wide (12 ms at 100,000 due lanes);
- by head score (the index on `head_score, next_at`): the walk stops at the first due lanes,
  passing over only those ahead of them that are not due: lanes in flight and, rarely, many
  lanes parked on a full key.

SQLite takes the walk by head score, bounded to the first WINDOW lanes in the index's order
(head score, due time, lane: a total order, so lanes sharing a score cannot stretch the walk),
and the sort by due time only when the walk found fewer than it wanted (then few lanes are
due, or the window was all lanes not due). The walk's result is exact: every due lane with a
lower head score than those found lies within the window. PostgreSQL keeps one statement,
which also skips the lanes other processes' claimers hold; its planner chooses between the
indexes from its statistics.

While an app is called as much as it may be, a claim passes over its functions' lanes by the
lanes' `function_id`, which no index holds: when that app's lanes fill the window, the claim
sorts every due lane, as above (a cost the app's lanes would otherwise have added in claims
and hand-backs of their items).
"""

from collections.abc import Collection
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, func, or_, select, tuple_
from weir.platform.store.engine.fast import Fast, off_index
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import lanes

WINDOW = 256  # lanes the walk by head score passes at most (lanes in flight are among them)


_COLUMNS = (lanes.c.lane, lanes.c.limits, lanes.c.head_score, lanes.c.function_id)
# The index's order, made total by the lane's name: many lanes may share a head score and a
# due time (a batch of events admitted in one transaction, parked on one full key).
_ORDER = (lanes.c.head_score, lanes.c.next_at, lanes.c.lane)
# the window's last lane: the WINDOW + 1st in that order, read from the index alone
_BOUND = select(*_ORDER).order_by(*_ORDER).limit(1).offset(_p("window"))
_DUE = off_index(lanes.c.next_at) <= _p("now")  # read from the walked index, not a range on it
# the walk: in head score order up to the window's last lane, stopping at the first due ones
_WALK = (
    select(*_COLUMNS)
    .where(tuple_(*_ORDER) <= tuple_(_p("score"), _p("next"), _p("lane")), _DUE)
    .order_by(lanes.c.head_score)
    .limit(_p("limit"))
)
_WALK_ALL = select(*_COLUMNS).where(_DUE).order_by(lanes.c.head_score).limit(_p("limit"))
# the sort: every due lane by due time, then sorted (not walked by head score)
_SORT = (
    select(*_COLUMNS)
    .where(lanes.c.next_at <= _p("now"))
    .order_by(off_index(lanes.c.head_score))
    .limit(_p("limit"))
)
_ONE_STATEMENT = (
    select(*_COLUMNS)
    .where(lanes.c.next_at <= _p("now"))
    .order_by(lanes.c.head_score)
    .limit(_p("limit"))
    .with_for_update(skip_locked=True)  # another process's claimer has these: skip them
)
_BOUND_FAST = Fast(_BOUND)
_FIRST_DUE_SCORE = Fast(
    select(lanes.c.head_score)
    .where(lanes.c.next_at <= _p("now"))
    .order_by(lanes.c.head_score)
    .limit(1)
)
_FAST = {query: Fast(query) for query in (_WALK, _WALK_ALL, _SORT, _ONE_STATEMENT)}
# The lanes as old as `score` or older, the first WINDOW + 1 in head score order (a walk of
# the index, bounded): whether one is due, and how many were looked at.
_AHEAD = (
    select(lanes.c.next_at)
    .where(lanes.c.head_score <= _p("score"))
    .order_by(lanes.c.head_score)
    .limit(WINDOW + 1)
    .subquery()
)
_DUE_AHEAD = Fast(select(func.max(_AHEAD.c.next_at <= _p("now")), func.count()).select_from(_AHEAD))
# Past a full window of lanes as old, none due: up to DUE_LOOKED due lanes (by due time), for
# the lowest head score among them.
DUE_LOOKED = 1024
_DUE_SAMPLE = (
    select(lanes.c.head_score).where(lanes.c.next_at <= _p("now")).limit(DUE_LOOKED).subquery()
)
_LOWEST_DUE = Fast(select(func.count(), func.min(_DUE_SAMPLE.c.head_score)))


def due_lanes(conn: Connection, now: int, limit: int, skip: Collection[str] = ()) -> list[Any]:
    """Up to `limit` due lanes (rows of `lane`, `limits`, `head_score`, `function_id`), lowest
    head score first, passing over the lanes of the functions in `skip`."""
    params: dict[str, Any] = {"b_now": now, "b_limit": limit}
    if conn.dialect.name != "sqlite":
        return _run(conn, _ONE_STATEMENT, params, skip)
    bound = _BOUND_FAST.first(conn, {"b_window": WINDOW})
    if bound is None:  # no more lanes than the window: the walk sees every one
        return _run(conn, _WALK_ALL, params, skip)
    params.update(b_score=bound.head_score, b_next=bound.next_at, b_lane=bound.lane)
    found = _run(conn, _WALK, params, skip)
    if len(found) >= limit:
        return found
    return _run(conn, _SORT, params, skip)


def due_before(conn: Connection, now: int, score: int) -> bool:
    """Whether a due lane's head has a head score of `score` or lower: work that a claim
    would take before an item of that score. Only a look: on PostgreSQL no lane is locked
    (another process's claimer may take it meanwhile). On SQLite one bounded walk of the
    lanes as old; only past a full window of them, none due, a bounded look through the due
    lanes. Past both bounds it answers yes: the item is left to the claim, which finds the
    oldest work itself."""
    if conn.dialect.name == "sqlite":
        due, seen = _DUE_AHEAD.first(conn, {"b_score": score, "b_now": now})
        if due or int(seen) <= WINDOW:
            return bool(due)
        looked, lowest = _LOWEST_DUE.first(conn, {"b_now": now})
        return int(looked) >= DUE_LOOKED or (lowest is not None and int(lowest) <= score)
    lowest = _FIRST_DUE_SCORE.scalar(conn, {"b_now": now})
    return lowest is not None and int(lowest) <= score


def not_skipped(skip: Collection[str]) -> ColumnElement[bool]:
    """Lanes of no function in `skip` (the timers' lane, of no one function, among them)."""
    return or_(lanes.c.function_id.is_(None), lanes.c.function_id.not_in(skip))


def _run(
    conn: Connection, query: Select[Any], params: dict[str, Any], skip: Collection[str]
) -> list[Any]:
    if skip:  # an expanding NOT IN: built per call (only while an app is called to its cap)
        return list(conn.execute(query.where(not_skipped(skip)), params))
    return _FAST[query].all(conn, params)
