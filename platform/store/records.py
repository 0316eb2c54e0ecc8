"""Named operations on the records of events and runs (all SQL lives in the store).

Tables: events, event_outcomes, run_keys, steps, history (runs: run_records.py, waits:
wait_records.py).

Hot statements are built once, with bind parameters: building a SQLAlchemy expression costs
several times more than executing it (bench/bench_store.py).
"""

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from weir.platform.store.schema import (
    event_outcomes,
    events,
    history,
    run_keys,
    steps,
)

RUN_KEY_MAX = 128  # run_keys.key's width

_INSERT_EVENT = insert(events)
_EVENT_PAYLOADS = select(events.c.id, events.c.payload).where(
    events.c.id.in_(bindparam("ids", expanding=True))
)
_GET_EVENT = select(events).where(events.c.id == bindparam("id"))
_INSERT_OUTCOME = insert(event_outcomes)
_RUN_KEY = select(run_keys.c.run_id, run_keys.c.expires_at).where(
    run_keys.c.function_id == bindparam("b_fn"), run_keys.c.key == bindparam("b_key")
)
_INSERT_RUN_KEY = insert(run_keys)
_RENEW_RUN_KEY = (
    update(run_keys)
    .where(run_keys.c.function_id == bindparam("b_fn"), run_keys.c.key == bindparam("b_key"))
    .values(run_id=bindparam("b_run"), expires_at=bindparam("b_expires"))
)
_SAVE_MEMO = {  # a step's result is written once: a second write of the same step is ignored
    "sqlite": sqlite.insert(steps).on_conflict_do_nothing().returning(steps.c.seq),
    "postgresql": postgresql.insert(steps).on_conflict_do_nothing().returning(steps.c.seq),
}
_INSERT_HISTORY = insert(history)
_CLOSE_HISTORY = (
    update(history)
    .where(
        history.c.run_id == bindparam("b_run"),
        history.c.kind == bindparam("b_kind"),
        history.c.step_id == bindparam("b_step"),
        history.c.ended_at.is_(None),
    )
    .values(status=bindparam("b_status"), ended_at=bindparam("b_now"))
)


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as stored: `payload` is the full event object the SDK sees (decoded)."""

    id: str
    name: str
    user_id: str | None  # the event's own `id`, if the sender set one
    ts: int
    received_at: int
    payload: dict[str, Any]


def event_from_row(row: Row[Any]) -> StoredEvent:
    """The one place an `events` row becomes a `StoredEvent`."""
    return StoredEvent(
        id=row.id,
        name=row.name,
        user_id=row.user_id,
        ts=int(row.ts),
        received_at=int(row.received_at),
        payload=json.loads(row.payload),
    )


def insert_events(conn: Connection, batch: Sequence[StoredEvent]) -> None:
    if not batch:
        return
    conn.execute(_INSERT_EVENT, [_event_row(e) for e in batch])


def _event_row(e: StoredEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "user_id": e.user_id,
        "ts": e.ts,
        "received_at": e.received_at,
        "payload": json.dumps(e.payload, separators=(",", ":")),
    }


def load_event_payloads(conn: Connection, ids: Sequence[str]) -> list[dict[str, Any]]:
    rows = conn.execute(_EVENT_PAYLOADS, {"ids": list(ids)}).all()
    by_id = {r.id: json.loads(r.payload) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What admission decided for an (event, function) pair that started no run of its own."""

    id: int
    event_id: str
    function_id: str
    outcome: str  # an EventOutcome value, or a gate's own word ("throttled")
    run_id: str | None  # the run the event went to instead, if any
    detail: str
    at: int


def outcome_from_row(row: Row[Any]) -> Outcome:
    """The one place an `event_outcomes` row becomes an `Outcome`."""
    return Outcome(
        id=int(row.id),
        event_id=row.event_id,
        function_id=row.function_id,
        outcome=row.outcome,
        run_id=row.run_id,
        detail=row.detail or "",
        at=int(row.at),
    )


def get_event(conn: Connection, event_id: str) -> StoredEvent | None:
    row = conn.execute(_GET_EVENT, {"id": event_id}).first()
    return None if row is None else event_from_row(row)


def record_outcome(
    conn: Connection,
    event_id: str,
    function_id: str,
    outcome: str,
    run_id: str | None,
    detail: str,
    now: int,
) -> None:
    values = {
        "event_id": event_id,
        "function_id": function_id,
        "outcome": outcome,
        "run_id": run_id,
        "detail": detail,
        "at": now,
    }
    conn.execute(_INSERT_OUTCOME, values)


def _stored_key(key: str) -> str:
    """Run keys fit their column (and an index entry) at any length: long ones are hashed."""
    if len(key) <= RUN_KEY_MAX:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def run_key_holder(conn: Connection, function_id: str, key: str, now: int) -> str | None:
    row = conn.execute(_RUN_KEY, {"b_fn": function_id, "b_key": _stored_key(key)}).first()
    return str(row.run_id) if row is not None and row.expires_at > now else None


def claim_run_key(
    conn: Connection, function_id: str, key: str, run_id: str, now: int, ttl_ms: int
) -> str | None:
    """Take a 24 h run key; returns the run that already holds it, or None if now ours.
    (Two processes inserting one key at once: the loser's job reruns, see database.py.)"""
    stored, expires = _stored_key(key), now + ttl_ms
    params = {"b_fn": function_id, "b_key": stored, "b_run": run_id, "b_expires": expires}
    row = conn.execute(_RUN_KEY, params).first()
    if row is not None and row.expires_at > now:
        return str(row.run_id)
    if row is not None:
        conn.execute(_RENEW_RUN_KEY, params)
        return None
    new = {"function_id": function_id, "key": stored, "run_id": run_id, "expires_at": expires}
    conn.execute(_INSERT_RUN_KEY, new)
    return None


def outcomes_for_event(conn: Connection, event_id: str) -> list[Outcome]:
    query = select(event_outcomes).where(event_outcomes.c.event_id == event_id)
    return [outcome_from_row(r) for r in conn.execute(query.order_by(event_outcomes.c.id))]


def save_memo(
    conn: Connection, run_id: str, step_id: str, seq: int, name: str, op: str, memo: str, now: int
) -> bool:
    """Store a step's result once; False if it was already stored (never overwritten)."""
    row = {
        "run_id": run_id,
        "step_id": step_id,
        "seq": seq,
        "name": name,
        "op": op,
        "memo": memo,
        "at": now,
    }
    # RETURNING, not rowcount: psycopg reports -1 rows for INSERT ... ON CONFLICT DO NOTHING.
    return conn.execute(_SAVE_MEMO[conn.dialect.name], row).first() is not None


def add_history(
    conn: Connection,
    run_id: str,
    kind: str,
    status: str,
    started_at: int,
    ended_at: int | None,
    *,
    step_id: str | None = None,
    name: str = "",
    attempt: int = 0,
    detail: dict[str, Any] | None = None,
) -> None:
    row = {
        "run_id": run_id,
        "kind": kind,
        "status": status,
        "started_at": started_at,
        "ended_at": ended_at,
        "step_id": step_id,
        "name": name,
        "attempt": attempt,
        "detail": json.dumps(detail or {}, separators=(",", ":")),
    }
    conn.execute(_INSERT_HISTORY, row)


def close_history(
    conn: Connection, run_id: str, kind: str, step_id: str, status: str, now: int
) -> None:
    params = {"b_run": run_id, "b_kind": kind, "b_step": step_id, "b_status": status, "b_now": now}
    conn.execute(_CLOSE_HISTORY, params)
