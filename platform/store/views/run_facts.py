"""What a run's state is derived from, beyond its row: its queue items, its open timeline
entries, the concurrency slots its keys hold, its lane's parking, its invoked children and
reruns. Each read takes many runs at once, so a list page costs a fixed handful of queries."""

import json
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Connection, Row, select
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import HistoryKind, Opcode, QueueKind, RunStatus
from weir.platform.store.engine.schema import history, lanes, queue, runs, slots
from weir.platform.store.records.steps import HistoryEntry, history_from_row
from weir.platform.store.views import handed


@record(slots=True)
class RunItem:
    """A queued (or executing) call of a run."""

    run_id: str
    step_id: str  # "step": a discovery call; else the planned step's id
    attempt: int  # 0 for the first attempt
    available_at: int  # when due; while leased, when the lease ends
    leased: bool
    claimed_at: int | None
    lane: str
    score: int


@record(slots=True)
class RunLink:
    """Another run in brief: a child, a parent or a rerun."""

    id: str
    function_id: str
    status: RunStatus


def run_items(conn: Connection, run_ids: Collection[str]) -> dict[str, list[RunItem]]:
    """The run's calls still queued or in flight (timers are not calls)."""
    found: dict[str, list[RunItem]] = {r: [] for r in run_ids}
    if not run_ids:
        return found
    query = (
        select(queue)
        .where(queue.c.run_id.in_(list(run_ids)), queue.c.kind == QueueKind.EXEC)
        .order_by(queue.c.available_at, queue.c.id)
    )
    for row in conn.execute(query):
        found[row.run_id].append(
            RunItem(
                run_id=row.run_id,
                step_id=row.step_id,
                attempt=int(row.attempt),
                available_at=int(row.available_at),
                leased=row.lease_owner is not None,
                claimed_at=None if row.claimed_at is None else int(row.claimed_at),
                lane=row.lane,
                score=int(row.score),
            )
        )
    return found


def open_entries(conn: Connection, run_ids: Collection[str]) -> dict[str, list[HistoryEntry]]:
    """Timeline entries not yet ended (sleeps, waits, invokes), oldest first."""
    found: dict[str, list[HistoryEntry]] = {r: [] for r in run_ids}
    if not run_ids:
        return found
    query = (
        select(history)
        .where(history.c.run_id.in_(list(run_ids)), history.c.ended_at.is_(None))
        .order_by(history.c.id)
    )
    for row in conn.execute(query):
        found[row.run_id].append(history_from_row(row))
    return found


@record
class CallFacts:
    """What the runs' calls reported: each step's name, and per run the step whose error its
    latest failed call reported (the step a retry of the whole call runs again)."""

    names: dict[tuple[str, str], str]  # (run, step id) -> name
    failed_step: dict[str, str]  # run -> step id


def call_facts(conn: Connection, run_ids: Collection[str]) -> CallFacts:
    facts = CallFacts({}, {})
    if not run_ids:
        return facts
    query = (
        select(history.c.run_id, history.c.detail)
        .where(history.c.run_id.in_(list(run_ids)), history.c.kind == "call")
        .order_by(history.c.id)
    )
    for row in conn.execute(query):
        for op in json.loads(row.detail or "{}").get("ops") or []:
            if not isinstance(op, dict) or not op.get("id"):
                continue
            if op.get("name"):
                facts.names[(row.run_id, str(op["id"]))] = str(op["name"])
            if op.get("op") in (Opcode.STEP_ERROR, Opcode.STEP_FAILED):
                facts.failed_step[row.run_id] = str(op["id"])
    return facts


def slot_holders(conn: Connection, key_hashes: Collection[str], now: int) -> dict[str, list[str]]:
    """Per concurrency key: the run of each live slot (one entry per executing item)."""
    found: dict[str, list[str]] = {k: [] for k in key_hashes}
    if not key_hashes:
        return found
    query = (
        select(slots.c.key_hash, queue.c.run_id)
        .join(queue, queue.c.id == slots.c.item_id)
        .where(slots.c.key_hash.in_(list(key_hashes)), slots.c.expires_at > now)
        .order_by(queue.c.run_id)
    )
    for row in conn.execute(query):
        found[row.key_hash].append(str(row.run_id))
    return found


def parked_lanes(conn: Connection, lane_names: Collection[str]) -> dict[str, str]:
    """Lanes parked on a full key: lane -> the key hash it waits for."""
    if not lane_names:
        return {}
    query = select(lanes.c.lane, lanes.c.blocked_on).where(
        lanes.c.lane.in_(list(lane_names)), lanes.c.blocked_on.is_not(None)
    )
    return {row.lane: str(row.blocked_on) for row in conn.execute(query)}


def runs_by_correlation(conn: Connection, correlations: Collection[str]) -> dict[str, RunLink]:
    """Invoked children by their correlation id, "<parent run>.<step>"."""
    if not correlations:
        return {}
    query = select(runs.c.id, runs.c.function_id, runs.c.status, runs.c.correlation_id).where(
        runs.c.correlation_id.in_(list(correlations))
    )
    rows = list(conn.execute(query))
    return {row.correlation_id: link for row, link in zip(rows, _links(conn, rows), strict=True)}


def invoke_step_name(conn: Connection, run_id: str, step_id: str) -> str:
    """The name run `run_id` gave its invoke step `step_id` ("" if none): what an invoked
    run's "Invoked by" says instead of the step's hash."""
    query = (
        select(history.c.name)
        .where(history.c.run_id == run_id, history.c.step_id == step_id)
        .where(history.c.kind == HistoryKind.INVOKE)
        .limit(1)
    )
    return str(conn.execute(query).scalar() or "")


def reruns_of(conn: Connection, run_id: str) -> list[RunLink]:
    # Sorted here, not by the query: ORDER BY id lets the planner walk the primary key over
    # every run instead of the (original_run_id) index (seconds at a million runs).
    query = select(runs.c.id, runs.c.function_id, runs.c.status).where(
        runs.c.original_run_id == run_id
    )
    return _links(conn, sorted(conn.execute(query), key=lambda r: r.id))


def run_links(conn: Connection, run_ids: Collection[str]) -> dict[str, RunLink]:
    if not run_ids:
        return {}
    query = select(runs.c.id, runs.c.function_id, runs.c.status).where(runs.c.id.in_(list(run_ids)))
    return {link.id: link for link in _links(conn, list(conn.execute(query)))}


def _links(conn: Connection, rows: Sequence[Row[Any, Any, Any, Any]]) -> list[RunLink]:
    """The runs of `rows` (id, function_id, status) in brief, each status as readers see it."""
    status = handed.current_statuses(conn, {r.id: r.status for r in rows})
    return [RunLink(r.id, r.function_id, status[r.id]) for r in rows]
