"""Retention's deletes: old finished runs and old events, a small batch per call.

Each call is one short write transaction, so the writer (and with it the scheduler) is never
held for long; the caller repeats until a batch comes back empty.
"""

import json
from collections.abc import Collection, Sequence

from sqlalchemy import Connection, Exists, and_, delete, exists, select
from weir.platform.foundation.ids import id_time_ms
from weir.platform.foundation.vocabulary import ENDED, GateName
from weir.platform.store.engine.schema import (
    event_outcomes,
    event_runs,
    events,
    gate_state,
    history,
    runs,
    signal_deliveries,
    steps,
)
from weir.platform.store.flow.gate_state import BATCH_GATE

# The gate-state rows that hold events for a run to come (runtime/flow/batch.py, debounce.py).
_HOLDING = (BATCH_GATE, GateName.DEBOUNCE.value)


def delete_old_runs(conn: Connection, before: int, limit: int) -> int:
    """Runs that ended before `before`, with their steps, history, signal deliveries and
    event links."""
    rows = conn.execute(
        select(runs.c.id, runs.c.event_ids)
        .where(runs.c.status.in_(ENDED), runs.c.created_at < before, runs.c.ended_at < before)
        .limit(limit)
    ).all()
    ids = [row.id for row in rows]
    if not ids:
        return 0
    event_ids = sorted({e for row in rows for e in json.loads(row.event_ids)})
    _delete_links(conn, event_ids, ids)
    conn.execute(delete(steps).where(steps.c.run_id.in_(ids)))
    conn.execute(delete(history).where(history.c.run_id.in_(ids)))
    conn.execute(delete(signal_deliveries).where(signal_deliveries.c.run_id.in_(ids)))
    conn.execute(delete(runs).where(runs.c.id.in_(ids)))
    return len(ids)


def _delete_links(conn: Connection, event_ids: Sequence[str], run_ids: Sequence[str]) -> None:
    # Through the (event_id, run_id) key: event_runs has no index on run_id alone.
    if event_ids:
        conn.execute(
            delete(event_runs).where(
                event_runs.c.event_id.in_(event_ids), event_runs.c.run_id.in_(run_ids)
            )
        )


def held_by_gates(conn: Connection) -> frozenset[str]:
    """The events an open batch or debounce window holds for the run it will start."""
    held: set[str] = set()
    rows = conn.execute(select(gate_state.c.state).where(gate_state.c.gate.in_(_HOLDING)))
    for (text,) in rows:
        state = json.loads(text)
        held.update(str(e) for e in state.get("event_ids", ()))
        if state.get("event_id") is not None:
            held.add(str(state["event_id"]))
    return frozenset(held)


def delete_old_events(
    conn: Connection, before: int, limit: int, held: Collection[str] = frozenset()
) -> int:
    """Events received before `before`, with their admission outcomes and run links; an event
    that an unfinished run still needs (its trigger) is kept until that run ends, and so is
    one in `held` (`held_by_gates`)."""
    room = limit + sum(1 for e in held if _maybe_before(e, before))  # held ones come back too
    found = conn.execute(
        select(events.c.id)
        .where(events.c.received_at < before, ~_needed_by_unfinished_run())
        .order_by(events.c.received_at)
        .limit(room)
    ).scalars()
    ids = [e for e in found if e not in held][:limit]
    if not ids:
        return 0
    conn.execute(delete(event_outcomes).where(event_outcomes.c.event_id.in_(ids)))
    conn.execute(delete(event_runs).where(event_runs.c.event_id.in_(ids)))
    conn.execute(delete(events).where(events.c.id.in_(ids)))
    return len(ids)


def _maybe_before(event_id: str, before: int) -> bool:
    """Whether the event may have been received before `before` (its id is a ULID of that
    time, unless made elsewhere: then it may)."""
    try:
        return id_time_ms(event_id) < before
    except ValueError:
        return True


def _needed_by_unfinished_run() -> Exists:
    return exists(
        select(event_runs.c.run_id)
        .join(runs, runs.c.id == event_runs.c.run_id)
        .where(and_(event_runs.c.event_id == events.c.id, runs.c.status.not_in(ENDED)))
    )
