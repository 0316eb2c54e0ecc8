"""The throttle, checked when a run's first call is claimed, inside the claim's transaction.

Admission reserves each start a slot (its item is due then), but only a check on the start
itself keeps the rule when the scheduler falls behind or restarts: then many reserved slots
lie in the past together. A start item carries its throttle in its payload; the claim asks
`gates.throttle.claim_start` against the key's meter of actual starts and either leases the
item (the meter takes the start) or defers it, with its attempt untouched and its run saying
until when it waits. On PostgreSQL the key's advisory lock makes check and meter update one
step across processes; a claimer that finds it taken leaves the item for its next look.
"""

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, select, update
from weir.platform.gates import throttle
from weir.platform.gates.decisions import from_json, to_json
from weir.platform.store import dialect, gatestate
from weir.platform.store.schema import gate_state, queue, runs

GATE = "throttle_start"  # gate_state rows: StartMeter per throttle key
PAYLOAD_KEY = "throttle"  # in a start item's payload

_METER = (
    select(gate_state.c.state, gate_state.c.expires_at)
    .where(gate_state.c.gate == GATE, gate_state.c.key_hash == bindparam("b_key"))
    .with_for_update()
)
_DEFER = (
    update(queue)
    .where(queue.c.id == bindparam("b_id"))
    .values(available_at=bindparam("b_at"), lease_owner=None)
)
_WAITING = update(runs).where(runs.c.id == bindparam("b_run")).values(waiting=bindparam("b_why"))


@dataclass(frozen=True, slots=True)
class Verdict:
    """`start`: lease the item. Otherwise `defer_to` ms, or None if another claimer holds the
    key right now (leave the item where it is)."""

    start: bool
    defer_to: int | None = None


GO = Verdict(start=True)
BUSY = Verdict(start=False)


def payload(config: throttle.ThrottleConfig, key_text: str, key_hash: str) -> dict[str, Any]:
    """What a start item carries so that the claim can check it without the function."""
    spec = {"key": key_text, "hash": key_hash, **to_json(config)}
    return {PAYLOAD_KEY: spec}


def check(conn: Connection, row: Any, item_payload: dict[str, Any], now: int) -> Verdict:
    """Decide a due item; items without a throttle always go."""
    spec = item_payload.get(PAYLOAD_KEY)
    if spec is None:
        return GO
    key_hash = str(spec["hash"])
    if not dialect.try_lock(conn, dialect.GATE_KEY, f"{GATE}:{key_hash}"):
        return BUSY
    config = throttle.ThrottleConfig(spec["period_ms"], spec["limit"], spec["burst"])
    meter = _load(conn, key_hash, now)
    key = str(spec["key"])
    decision = throttle.claim_start(config, meter, now, (row.score, row.id), key)
    stored = decision.meter
    gatestate.save(conn, GATE, key_hash, to_json(stored), stored.expires_ms)
    if decision.admitted:
        return GO
    _defer(conn, row, decision)
    return Verdict(start=False, defer_to=decision.start_ms)


def _load(conn: Connection, key_hash: str, now: int) -> throttle.StartMeter | None:
    row = conn.execute(_METER, {"b_key": key_hash}).first()
    if row is None or (row.expires_at is not None and row.expires_at <= now):
        return None
    return from_json(throttle.StartMeter, json.loads(row.state))


def _defer(conn: Connection, row: Any, decision: throttle.StartDecision) -> None:
    # Waiting burns no attempt: only the due time moves; the score keeps its queue order.
    conn.execute(_DEFER, {"b_id": row.id, "b_at": decision.start_ms})
    if row.run_id is not None and decision.wait is not None:
        why = json.dumps(to_json(decision.wait))
        conn.execute(_WAITING, {"b_run": row.run_id, "b_why": why})
