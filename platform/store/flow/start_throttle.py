"""The throttle, checked when a run's first call is claimed, inside the claim's transaction.

Admission reserves each start a slot (its item is due then), but only a check on the start
itself keeps the rule when the scheduler falls behind or restarts: then many reserved slots
lie in the past together. A start item carries its throttle in its payload; the claim decides
it on the starts that really happened, twice (`gates.throttle`): the period window (at most
limit + burst starts in any period) is one more strict rolling window of the start
(`window`, decided and charged with the start's own windows in `rolling_windows`), and the
claim's GCRA (`check`) bounds longer spans. A start refused by either is deferred, with its
attempt untouched and its run saying until when it waits. On PostgreSQL each meter's advisory
lock makes check and update one step across processes; a claimer that finds one taken leaves
the item for its next look.
"""

import functools
import hashlib
import json
from typing import Any

from sqlalchemy import Connection, bindparam, select, update
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates import throttle
from weir.platform.gates.decisions import from_json, to_json
from weir.platform.store.engine import dialect
from weir.platform.store.engine.schema import gate_state, queue, runs
from weir.platform.store.flow import gate_state as gatestate
from weir.platform.store.flow.rolling_windows import Scope
from weir.platform.store.flow.start_verdict import BUSY, GO, Verdict

GATE = "throttle_start"  # gate_state rows: StartMeter per throttle key
PAYLOAD_KEY = GateName.THROTTLE.value  # in a start item's payload

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


def payload(config: throttle.ThrottleConfig, key_text: str, key_hash: str) -> dict[str, Any]:
    """What a start item carries so that the claim can check it without the function: the
    evaluated key and the throttle's numbers (not its key expression)."""
    numbers = {"period_ms": config.period_ms, "limit": config.limit, "burst": config.burst}
    return {PAYLOAD_KEY: {"key": key_text, "hash": key_hash, **numbers}}


@functools.lru_cache(maxsize=1024)
def _config(period_ms: int, limit: int, burst: int) -> throttle.ThrottleConfig:
    """The throttle a start item names, built once per distinct one (a config is frozen)."""
    return throttle.ThrottleConfig(limit, period_ms, burst)


def _config_of(spec: dict[str, Any]) -> throttle.ThrottleConfig:
    return _config(int(spec["period_ms"]), int(spec["limit"]), int(spec["burst"]))


def window(item_payload: dict[str, Any]) -> list[Scope]:
    """The start's period window, as a rolling-window scope of its own (none if the start is
    not throttled). Its hash is derived from the throttle key's, so that items queued before
    this window existed get it too."""
    spec = item_payload.get(PAYLOAD_KEY)
    if spec is None:
        return []
    config = _config_of(spec)
    rule = config.window
    scope_hash = hashlib.sha256(f"{GATE}\x00window\x00{spec['hash']}".encode()).hexdigest()
    key = str(spec["key"])
    return [Scope(scope_hash[:32], rule.limit, rule.window_ms, key, gate=GateName.THROTTLE.value)]


def check(conn: Connection, row: Any, item_payload: dict[str, Any], now: int) -> Verdict:
    """Decide a due item; items without a throttle always go."""
    spec = item_payload.get(PAYLOAD_KEY)
    if spec is None:
        return GO
    key_hash = str(spec["hash"])
    if not dialect.try_lock(conn, dialect.GATE_KEY, f"{GATE}:{key_hash}"):
        return BUSY
    config = _config_of(spec)
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
