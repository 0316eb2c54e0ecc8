"""Named reads for the metrics endpoint: the queue's depth and age, deferrals per gate.

Computed at scrape time from what is stored, so every process sharing the store reports the
same numbers and nothing needs to be kept in step by hand.
"""

from dataclasses import field

from sqlalchemy import JSON, ColumnElement, Connection, case, cast, func, select, type_coerce
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import ENDED
from weir.platform.store.engine.schema import event_outcomes, lanes, queue, runs
from weir.platform.store.flow import capacity
from weir.platform.store.flow.capacity import Capacity
from weir.platform.store.views import handed


@record
class StoreStats:
    queue_due: int = 0  # due now, not held by any process: waiting for a worker or a slot
    queue_scheduled: int = 0  # due later (sleeps, retries, timers)
    queue_leased: int = 0  # held by a process right now
    oldest_due_ms: int = 0  # how long the longest-waiting due item has waited
    outcomes: dict[str, int] = field(default_factory=dict)  # event_outcomes rows per outcome
    waiting: dict[str, int] = field(default_factory=dict)  # unfinished runs per waiting gate
    drifted: list[Capacity] = field(default_factory=list)  # capacities the code declares otherwise
    # unfinished runs by status as every reader shows it (`handed`): QUEUED, RUNNING
    unfinished: dict[str, int] = field(default_factory=dict)


def snapshot(conn: Connection, now: int) -> StoreStats:
    due, scheduled, leased, oldest = _queue(conn, now)
    return StoreStats(
        queue_due=due,
        queue_scheduled=scheduled,
        queue_leased=leased,
        oldest_due_ms=max(0, now - oldest) if oldest is not None else 0,
        outcomes=_outcomes(conn),
        waiting=_waiting(conn),
        drifted=capacity.drifted(conn),
        unfinished=handed.unfinished_counts(conn),
    )


def _queue(conn: Connection, now: int) -> tuple[int, int, int, int | None]:
    free = queue.c.lease_owner.is_(None)
    is_due = free & (queue.c.available_at <= now)
    row = conn.execute(
        select(
            func.count(case((is_due, 1))),
            func.count(case((free & (queue.c.available_at > now), 1))),
            func.count(case((~free, 1))),
            func.min(case((is_due, queue.c.available_at))),
        )
    ).one()
    return int(row[0]), int(row[1]), int(row[2]), None if row[3] is None else int(row[3])


def _outcomes(conn: Connection) -> dict[str, int]:
    query = select(event_outcomes.c.outcome, func.count()).group_by(event_outcomes.c.outcome)
    return {str(outcome): int(n) for outcome, n in conn.execute(query)}


def _waiting(conn: Connection) -> dict[str, int]:
    gate = _gate(conn)
    query = (
        select(gate, func.count())
        # a run whose call is in the app is past its gates, whatever its row still says
        .where(runs.c.status.not_in(ENDED), runs.c.waiting.is_not(None), ~handed.HANDED)
        .group_by(gate)
    )
    counts = {str(name): int(n) for name, n in conn.execute(query) if name is not None}
    parked = _parked_runs(conn)
    if parked:  # runs waiting for a concurrency slot are not marked: their lane is parked
        counts["concurrency"] = counts.get("concurrency", 0) + parked
    return counts


def _parked_runs(conn: Connection) -> int:
    query = (
        select(func.count(func.distinct(queue.c.run_id)))
        .join(lanes, lanes.c.lane == queue.c.lane)
        .where(lanes.c.blocked_on.is_not(None), queue.c.lease_owner.is_(None))
    )
    return int(conn.execute(query).scalar_one())


def _gate(conn: Connection) -> ColumnElement[str]:
    # The column is JSON kept as text: PostgreSQL needs a cast before ->>, SQLite's
    # json_extract reads text as it is.
    as_json = cast if conn.dialect.name == "postgresql" else type_coerce
    gate: ColumnElement[str] = as_json(runs.c.waiting, JSON)["gate"].as_string()
    return gate


def ping(conn: Connection) -> int:
    """The cheapest round trip: readiness asks it to prove the store answers."""
    return int(conn.execute(select(1)).scalar_one())
