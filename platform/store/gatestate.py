"""Named operations on flow-control gate state (meters, windows, batches, locks)."""

import json
from typing import Any

from sqlalchemy import Connection, delete, insert, select, update
from weir.platform.store.schema import gate_state


def load(conn: Connection, gate: str, key_hash: str, now: int) -> dict[str, Any] | None:
    row = conn.execute(
        select(gate_state.c.state, gate_state.c.expires_at).where(
            gate_state.c.gate == gate, gate_state.c.key_hash == key_hash
        )
    ).first()
    if row is None or (row.expires_at is not None and row.expires_at <= now):
        return None
    value: dict[str, Any] = json.loads(row.state)
    return value


def save(
    conn: Connection, gate: str, key_hash: str, state: dict[str, Any], expires_at: int | None
) -> None:
    text = json.dumps(state, separators=(",", ":"))
    done = conn.execute(
        update(gate_state)
        .where(gate_state.c.gate == gate, gate_state.c.key_hash == key_hash)
        .values(state=text, expires_at=expires_at)
    )
    if done.rowcount == 0:
        conn.execute(
            insert(gate_state).values(
                gate=gate, key_hash=key_hash, state=text, expires_at=expires_at
            )
        )


def drop(conn: Connection, gate: str, key_hash: str) -> None:
    conn.execute(
        delete(gate_state).where(gate_state.c.gate == gate, gate_state.c.key_hash == key_hash)
    )


def drop_expired(conn: Connection, gate: str, now: int) -> None:
    conn.execute(
        delete(gate_state).where(gate_state.c.gate == gate, gate_state.c.expires_at <= now)
    )
