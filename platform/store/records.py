"""Named operations on events, runs, steps, history and waits (all SQL lives in the store)."""

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from weir.platform.store.schema import (
    event_outcomes,
    event_runs,
    events,
    history,
    run_keys,
    runs,
    steps,
    waits,
)

RUN_KEY_MAX = 128  # run_keys.key's width
ENDED = ("COMPLETED", "FAILED", "CANCELLED", "SKIPPED")


@dataclass(frozen=True)
class StoredEvent:
    id: str
    name: str
    user_id: str | None
    ts: int
    received_at: int
    payload: dict[str, Any]


def insert_events(conn: Connection, batch: Sequence[StoredEvent]) -> None:
    if not batch:
        return
    conn.execute(insert(events), [_event_row(e) for e in batch])


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
    rows = conn.execute(select(events.c.id, events.c.payload).where(events.c.id.in_(ids))).all()
    by_id = {r.id: json.loads(r.payload) for r in rows}
    return [by_id[i] for i in ids if i in by_id]


def get_event(conn: Connection, event_id: str) -> Any:
    return conn.execute(select(events).where(events.c.id == event_id)).first()


def record_outcome(
    conn: Connection,
    event_id: str,
    function_id: str,
    outcome: str,
    run_id: str | None,
    detail: str,
    now: int,
) -> None:
    conn.execute(
        insert(event_outcomes).values(
            event_id=event_id,
            function_id=function_id,
            outcome=outcome,
            run_id=run_id,
            detail=detail,
            at=now,
        )
    )


def _stored_key(key: str) -> str:
    """Run keys fit their column (and an index entry) at any length: long ones are hashed."""
    if len(key) <= RUN_KEY_MAX:
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()


def run_key_holder(conn: Connection, function_id: str, key: str, now: int) -> str | None:
    key = _stored_key(key)
    row = conn.execute(
        select(run_keys.c.run_id, run_keys.c.expires_at).where(
            run_keys.c.function_id == function_id, run_keys.c.key == key
        )
    ).first()
    return str(row.run_id) if row is not None and row.expires_at > now else None


def claim_run_key(
    conn: Connection, function_id: str, key: str, run_id: str, now: int, ttl_ms: int
) -> str | None:
    """Take a 24 h run key; returns the run that already holds it, or None if now ours."""
    key = _stored_key(key)
    row = conn.execute(
        select(run_keys.c.run_id, run_keys.c.expires_at).where(
            run_keys.c.function_id == function_id, run_keys.c.key == key
        )
    ).first()
    if row is not None and row.expires_at > now:
        return str(row.run_id)
    if row is not None:
        conn.execute(
            delete(run_keys).where(run_keys.c.function_id == function_id, run_keys.c.key == key)
        )
    try:
        with conn.begin_nested():
            conn.execute(
                insert(run_keys).values(
                    function_id=function_id, key=key, run_id=run_id, expires_at=now + ttl_ms
                )
            )
    except IntegrityError:
        return "?"
    return None


def insert_run(conn: Connection, row: dict[str, Any], event_ids: Iterable[str]) -> None:
    conn.execute(insert(runs).values(**row))
    conn.execute(insert(event_runs), [{"event_id": e, "run_id": row["id"]} for e in event_ids])


def get_run(conn: Connection, run_id: str) -> Any:
    return conn.execute(select(runs).where(runs.c.id == run_id)).first()


def update_run(conn: Connection, run_id: str, **values: Any) -> None:
    conn.execute(update(runs).where(runs.c.id == run_id).values(**values))


def runs_for_event(conn: Connection, event_id: str) -> list[Any]:
    query = (
        select(runs)
        .join(event_runs, event_runs.c.run_id == runs.c.id)
        .where(event_runs.c.event_id == event_id)
        .order_by(runs.c.id)
    )
    return list(conn.execute(query))


def outcomes_for_event(conn: Connection, event_id: str) -> list[Any]:
    query = select(event_outcomes).where(event_outcomes.c.event_id == event_id)
    return list(conn.execute(query.order_by(event_outcomes.c.id)))


def load_memos(conn: Connection, run_id: str) -> list[Any]:
    query = select(steps.c.step_id, steps.c.memo, steps.c.seq).where(steps.c.run_id == run_id)
    return list(conn.execute(query.order_by(steps.c.seq)))


def list_steps(conn: Connection, run_id: str) -> list[Any]:
    return list(conn.execute(select(steps).where(steps.c.run_id == run_id).order_by(steps.c.seq)))


def save_memo(
    conn: Connection, run_id: str, step_id: str, seq: int, name: str, op: str, memo: str, now: int
) -> bool:
    """Store a step's result once; False if it was already stored (never overwritten)."""
    exists = conn.execute(
        select(steps.c.seq).where(steps.c.run_id == run_id, steps.c.step_id == step_id)
    ).first()
    if exists is not None:
        return False
    conn.execute(
        insert(steps).values(
            run_id=run_id, step_id=step_id, seq=seq, name=name, op=op, memo=memo, at=now
        )
    )
    return True


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
    conn.execute(
        insert(history).values(
            run_id=run_id,
            kind=kind,
            status=status,
            started_at=started_at,
            ended_at=ended_at,
            step_id=step_id,
            name=name,
            attempt=attempt,
            detail=json.dumps(detail or {}, separators=(",", ":")),
        )
    )


def list_history(conn: Connection, run_id: str) -> list[Any]:
    query = select(history).where(history.c.run_id == run_id).order_by(history.c.id)
    return list(conn.execute(query))


def close_history(
    conn: Connection, run_id: str, kind: str, step_id: str, status: str, now: int
) -> None:
    conn.execute(
        update(history)
        .where(
            history.c.run_id == run_id,
            history.c.kind == kind,
            history.c.step_id == step_id,
            history.c.ended_at.is_(None),
        )
        .values(status=status, ended_at=now)
    )


def insert_wait(conn: Connection, **values: Any) -> int:
    return int(conn.execute(insert(waits).values(**values).returning(waits.c.id)).scalar_one())


def waits_for_event(conn: Connection, event_name: str, received_at: int) -> list[Any]:
    query = select(waits).where(waits.c.event_name == event_name, waits.c.created_at < received_at)
    return list(conn.execute(query.order_by(waits.c.id)))


def get_wait(conn: Connection, run_id: str, step_id: str) -> Any:
    query = select(waits).where(waits.c.run_id == run_id, waits.c.step_id == step_id)
    return conn.execute(query).first()


def wait_by_correlation(conn: Connection, correlation_id: str) -> Any:
    return conn.execute(select(waits).where(waits.c.correlation_id == correlation_id)).first()


def delete_wait(conn: Connection, wait_id: int) -> bool:
    return conn.execute(delete(waits).where(waits.c.id == wait_id)).rowcount == 1


def delete_run_waits(conn: Connection, run_id: str) -> None:
    conn.execute(delete(waits).where(waits.c.run_id == run_id))


def run_waits(conn: Connection, run_id: str) -> list[Any]:
    return list(conn.execute(select(waits).where(waits.c.run_id == run_id)))
