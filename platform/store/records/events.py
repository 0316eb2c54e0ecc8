"""Events and their outcomes as records: a stored event (payload decoded once) and why an
event started no run of a function it matched.

Hot statements are built once, with bind parameters: building a SQLAlchemy expression costs
several times more than executing it (bench/bench_store.py).
"""

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Row, bindparam, insert, select
from weir.expressions import Document
from weir.platform.foundation.record_type import record
from weir.platform.store.engine import json_text
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.schema import event_outcomes, events

_INSERT_EVENT = Fast(insert(events), ("id", "name", "user_id", "ts", "received_at", "payload"))
_EVENT_PAYLOADS = select(events.c.id, events.c.payload).where(
    events.c.id.in_(bindparam("ids", expanding=True))
)
_EVENT_PAYLOAD = Fast(select(events.c.payload).where(events.c.id == bindparam("id")))
_GET_EVENT = select(events).where(events.c.id == bindparam("id"))
_INSERT_OUTCOME = insert(event_outcomes)


@record(slots=True)
class StoredEvent:
    """An event as stored: `payload` is the full event object the SDK sees (decoded; a
    large event as it arrived is a Document, its bytes stored as they are)."""

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
    if len(batch) == 1:
        _INSERT_EVENT.run(conn, _event_row(batch[0]))
    else:
        _INSERT_EVENT.many(conn, [_event_row(e) for e in batch])


def _event_row(e: StoredEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "user_id": e.user_id,
        "ts": e.ts,
        "received_at": e.received_at,
        "payload": payload_text(e.payload),
    }


def payload_text(payload: dict[str, Any]) -> str:
    """The stored JSON: a Document's own bytes, else the same compact form made here."""
    if isinstance(payload, Document):
        return payload.raw.decode()
    return json_text.dumps(payload)  # Weir's own events may hold huge integers: it writes them


def load_event_payloads(conn: Connection, ids: Sequence[str]) -> list[dict[str, Any]]:
    if len(ids) == 1:  # nearly every run has one trigger event
        payload = _EVENT_PAYLOAD.scalar(conn, {"id": ids[0]})
        return [] if payload is None else [json.loads(payload)]
    rows = conn.execute(_EVENT_PAYLOADS, {"ids": list(ids)}).all()
    by_id = {r.id: json.loads(r.payload) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


def load_event_texts(conn: Connection, ids: Sequence[str]) -> list[str]:
    """The stored JSON of the events, in the order of `ids` (those still stored)."""
    if len(ids) == 1:  # nearly every call: one trigger event, by a statement built once
        payload = _EVENT_PAYLOAD.scalar(conn, {"id": ids[0]})
        return [] if payload is None else [str(payload)]
    rows = conn.execute(_EVENT_PAYLOADS, {"ids": list(ids)}).all()
    by_id = {r.id: str(r.payload) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


@record(slots=True)
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


def outcomes_for_event(conn: Connection, event_id: str) -> list[Outcome]:
    query = select(event_outcomes).where(event_outcomes.c.event_id == event_id)
    return [outcome_from_row(r) for r in conn.execute(query.order_by(event_outcomes.c.id))]
