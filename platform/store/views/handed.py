"""A run is Running from the moment its first call is handed to the app, not only once an
answer is applied: the one rule every reader (REST, GraphQL, the UI, the CLI, list filters,
bulk actions, metrics) reads a run's status by.

The run's row is marked started when the first answer is applied (`runtime.outcomes`,
backdated to the claim). Until then the row says QUEUED, and the call's queue item is what
says otherwise: it is leased, and its `claimed_at` is when the call began. Deriving the status
from the lease here costs the claim nothing (no write of the run's row per start): only reads
of runs whose row says QUEUED look at their queue items, through the (run_id) index."""

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from sqlalchemy import Connection, and_, exists, func, or_, select
from sqlalchemy.sql.elements import ColumnElement
from weir.platform.foundation.vocabulary import QueueKind, RunStatus
from weir.platform.store.engine.schema import queue, runs
from weir.platform.store.records.runs import Run

_LEASED_CALL = and_(queue.c.kind == QueueKind.EXEC, queue.c.lease_owner.is_not(None))
# a run's call is in the app (correlated with the `runs` row of the enclosing statement)
HANDED: ColumnElement[bool] = exists(
    select(queue.c.id).where(queue.c.run_id == runs.c.id, _LEASED_CALL)
)


def stored_parts(status: str) -> list[tuple[str, ColumnElement[bool] | None]]:
    """The stored statuses (each with a further condition, or None) that read as `status`:
    Running is a row marked RUNNING, or a QUEUED row whose call is in the app; Queued is a
    QUEUED row whose call is not. Kept apart so a reader can walk each through the
    (status, created_at) index."""
    if status == RunStatus.RUNNING:
        return [(RunStatus.RUNNING, None), (RunStatus.QUEUED, HANDED)]
    if status == RunStatus.QUEUED:
        return [(RunStatus.QUEUED, ~HANDED)]
    return [(status, None)]


def status_in(statuses: Collection[str]) -> ColumnElement[bool]:
    """The runs (of the enclosing statement) whose status reads as one of `statuses`."""
    parts = []
    for status in statuses:
        for stored, extra in stored_parts(status):
            plain = runs.c.status == stored
            parts.append(plain if extra is None else and_(plain, extra))
    return or_(*parts)


def handed_since(conn: Connection, run_ids: Collection[str]) -> dict[str, int]:
    """Of `run_ids`, the runs with a call in the app: since when (its claim)."""
    if not run_ids:
        return {}
    query = (
        select(queue.c.run_id, func.min(queue.c.claimed_at))
        .where(queue.c.run_id.in_(sorted(run_ids)), _LEASED_CALL)
        .group_by(queue.c.run_id)
    )
    return {str(r[0]): int(r[1]) for r in conn.execute(query) if r[1] is not None}


def current(conn: Connection, found: Sequence[Run]) -> list[Run]:
    """The runs as readers see them: a QUEUED run whose call is in the app is RUNNING, started
    when that call was claimed, and waits for nothing (its call is past every gate)."""
    queued = [r.id for r in found if r.status == RunStatus.QUEUED]
    since = handed_since(conn, queued) if queued else {}
    if not since:
        return list(found)
    return [
        replace(r, status=RunStatus.RUNNING, started_at=since[r.id], waiting=None)
        if r.id in since
        else r
        for r in found
    ]


def current_run(conn: Connection, run: Run | None) -> Run | None:
    return None if run is None else current(conn, [run])[0]


def current_statuses(conn: Connection, statuses: Mapping[str, str]) -> dict[str, RunStatus]:
    """Run id -> status as readers see it, from the stored ones."""
    queued = [r for r, s in statuses.items() if s == RunStatus.QUEUED]
    since = handed_since(conn, queued) if queued else {}
    return {r: RunStatus.RUNNING if r in since else RunStatus(s) for r, s in statuses.items()}


def unfinished_counts(conn: Connection) -> dict[str, int]:
    """How many runs read as Queued and as Running (the metrics' gauge; a status with no
    run is left out, as gauges of other counts are): read off the
    (status, created_at) index, and the leased calls (few: those in flight)."""
    query = (
        select(runs.c.status, func.count())
        .where(runs.c.status.in_([RunStatus.QUEUED, RunStatus.RUNNING]))
        .group_by(runs.c.status)
    )
    stored = {str(status): int(n) for status, n in conn.execute(query)}
    moved = (
        select(func.count(func.distinct(queue.c.run_id)))
        .join(runs, runs.c.id == queue.c.run_id)
        .where(_LEASED_CALL, runs.c.status == RunStatus.QUEUED)
    )
    n = int(conn.execute(moved).scalar_one())
    counts = {
        RunStatus.QUEUED: stored.get(RunStatus.QUEUED, 0) - n,
        RunStatus.RUNNING: stored.get(RunStatus.RUNNING, 0) + n,
    }
    return {str(status): count for status, count in counts.items() if count}  # none: absent
