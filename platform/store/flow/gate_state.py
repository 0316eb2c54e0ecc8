"""Named operations on flow-control gate state (meters, windows, batches, locks).

Statements are built once (`Fast`): admission of a throttled, rate-limited, debounced or
batched event reads and writes its gate's state, so these run for every such event.
"""

import json
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from weir.platform.store.engine import dialect
from weir.platform.store.engine.fast import Fast
from weir.platform.store.engine.fast import param as _p
from weir.platform.store.engine.schema import gate_state

# Batching's rows and key namespace: named before GateName, stored, so kept.
BATCH_GATE = "batch"
_THE_ROW = (gate_state.c.gate == _p("gate"), gate_state.c.key_hash == _p("key"))
_LOAD_QUERY = select(gate_state.c.state, gate_state.c.expires_at).where(*_THE_ROW)
_LOAD = Fast(_LOAD_QUERY)
_LOAD_LOCKED = Fast(
    _LOAD_QUERY.with_for_update()
)  # PostgreSQL locks the row; SQLite has one writer
_UPDATE = Fast(update(gate_state).where(*_THE_ROW), ("state", "expires_at"))
_INSERT = Fast(insert(gate_state), ("gate", "key_hash", "state", "expires_at"))
_DROP = Fast(delete(gate_state).where(*_THE_ROW))
_DROP_EXPIRED = Fast(
    delete(gate_state).where(gate_state.c.gate == _p("gate"), gate_state.c.expires_at <= _p("now"))
)


def live_state(row: Any, now: int) -> dict[str, Any] | None:
    """The state a row holds, unless it has expired (or there is no row)."""
    if row is None or (row.expires_at is not None and row.expires_at <= now):
        return None
    value: dict[str, Any] = json.loads(row.state)
    return value


def load(conn: Connection, gate: str, key_hash: str, now: int) -> dict[str, Any] | None:
    return live_state(_LOAD.first(conn, {"b_gate": gate, "b_key": key_hash}), now)


def save(
    conn: Connection, gate: str, key_hash: str, state: dict[str, Any], expires_at: int | None
) -> None:
    text = json.dumps(state, separators=(",", ":"))
    values = {"state": text, "expires_at": expires_at}
    if _UPDATE.rowcount(conn, {"b_gate": gate, "b_key": key_hash, **values}) == 0:
        _INSERT.run(conn, {"gate": gate, "key_hash": key_hash, **values})


def drop(conn: Connection, gate: str, key_hash: str) -> None:
    _DROP.run(conn, {"b_gate": gate, "b_key": key_hash})


def drop_expired(conn: Connection, gate: str, now: int) -> None:
    _DROP_EXPIRED.run(conn, {"b_gate": gate, "b_now": now})


def load_for_update(conn: Connection, gate: str, key_hash: str, now: int) -> dict[str, Any] | None:
    """A gate's state row, locked until the transaction ends where the backend can (PostgreSQL
    row lock; SQLite already has one writer), so two processes never spend one budget twice.
    The key's advisory lock covers the first use too, when there is no row to lock yet."""
    lock(conn, f"{gate}:{key_hash}")
    return live_state(_LOAD_LOCKED.first(conn, {"b_gate": gate, "b_key": key_hash}), now)


def lock(conn: Connection, name: str) -> None:
    """Hold a gate's advisory lock until the transaction ends (PostgreSQL; SQLite has one
    writer). `name` is text: no NUL on PostgreSQL."""
    dialect.lock(conn, dialect.GATE_KEY, name)
