"""Named store operations that flow-control gates need beyond gatestate's basic ones."""

from typing import Any

from sqlalchemy import Connection, func, select
from weir.platform.store import dialect, gatestate
from weir.platform.store.schema import queue
from weir.platform.vocabulary import QueueKind


def load_for_update(conn: Connection, gate: str, key_hash: str, now: int) -> dict[str, Any] | None:
    """A gate's state row, locked until the transaction ends where the backend can (PostgreSQL
    row lock; SQLite already has one writer), so two processes never spend one budget twice.
    The key's advisory lock covers the first use too, when there is no row to lock yet."""
    dialect.lock(conn, dialect.GATE_KEY, f"{gate}:{key_hash}")  # text: no NUL on PG
    row = gatestate.LOAD_LOCKED.first(conn, {"b_gate": gate, "b_key": key_hash})
    return gatestate.live_state(row, now)


def in_flight_until(conn: Connection, run_id: str) -> int | None:
    """When the latest lease on the run's claimed calls ends; None if none is in flight."""
    query = select(func.max(queue.c.available_at)).where(
        queue.c.run_id == run_id, queue.c.lease_owner.is_not(None), queue.c.kind == QueueKind.EXEC
    )
    value = conn.execute(query).scalar()
    return None if value is None else int(value)
