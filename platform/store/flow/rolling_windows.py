"""Strict rolling windows, checked and charged when a run's start item is claimed.

A start item carries its scopes in its payload (admission evaluated their keys). The claim,
in its own transaction, asks `gates.rolling_window.decide` for every scope, each against its
header row (`rolling_scopes`) and at most two entries of its log (`rolling_log`, by number):
one indexed lookup, whatever the limit. Room in all scopes: the throttle is asked next, and
only if the start goes ahead is each scope charged (one log row). No room in one: nothing is
charged, and the item is deferred to the moment the last blocking entry leaves its window,
with its attempt untouched and its run saying which window waits until when.

On PostgreSQL each scope is decided under its advisory lock, so several processes share one
log; a claimer that finds one taken leaves the item for its next look. Storage stays bounded:
a charge prunes its scope's entries that left the window, and a scope idle for a whole window
is deleted (by retention, and by each newly created scope, two at a time).
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, update
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates import rolling_window as rw
from weir.platform.gates.decisions import to_json
from weir.platform.store import database
from weir.platform.store.engine import dialect
from weir.platform.store.engine.schema import queue, rolling_log, rolling_scopes, runs
from weir.platform.store.flow import capacity
from weir.platform.store.flow.start_verdict import BUSY, Verdict

PAYLOAD_KEY = "rolling"  # in a start item's payload: a list of Scope dicts
SWEEP_ON_CREATE = 2  # idle scopes a new scope deletes

Then = Callable[[Connection, Any, dict[str, Any], int], Verdict]

_HEADER = select(rolling_scopes).where(rolling_scopes.c.scope_hash == bindparam("b_scope"))
_ENTRIES = select(rolling_log.c.seq, rolling_log.c.at_ms).where(
    rolling_log.c.scope_hash == bindparam("b_scope"),
    rolling_log.c.seq.in_(bindparam("b_seqs", expanding=True)),
)
_LOG = insert(rolling_log)
_PRUNE = delete(rolling_log).where(
    rolling_log.c.scope_hash == bindparam("b_scope"), rolling_log.c.at_ms <= bindparam("b_cut")
)
_INSERT_HEADER = insert(rolling_scopes)
_UPDATE_HEADER = update(rolling_scopes).where(rolling_scopes.c.scope_hash == bindparam("b_scope"))
_IDLE = (
    select(rolling_scopes.c.scope_hash)
    .where(rolling_scopes.c.expires_at <= bindparam("b_now"))
    .limit(bindparam("b_limit"))
)
_DROP_LOG = delete(rolling_log).where(rolling_log.c.scope_hash == bindparam("b_scope"))
_DROP_HEADER = delete(rolling_scopes).where(
    rolling_scopes.c.scope_hash == bindparam("b_scope"),
    rolling_scopes.c.expires_at <= bindparam("b_now"),
)
_DEFER = (
    update(queue)
    .where(queue.c.id == bindparam("b_id"))
    .values(available_at=bindparam("b_at"), lease_owner=None)
)
_WAITING = update(runs).where(runs.c.id == bindparam("b_run")).values(waiting=bindparam("b_why"))


@record(slots=True)
class Scope:
    """One rolling window a start needs: its scope's hash, rule, and names for reasons."""

    hash: str
    limit: int
    window_ms: int
    key: str = ""
    rate_name: str | None = None
    capacity: str = ""  # the live capacity whose stored size replaces `limit` ("": none)
    # whose window: a declared one, or a throttle's period window
    gate: str = GateName.ROLLING_WINDOW.value

    @property
    def config(self) -> rw.WindowRule:
        if self.gate != GateName.ROLLING_WINDOW:  # a throttle's window has the throttle's bounds
            return rw.WindowRule(self.limit, self.window_ms)
        return rw.WindowConfig(self.limit, self.window_ms)


@record(slots=True)
class _Decided:
    scope: Scope
    exists: bool
    decision: rw.Decision


def payload(scopes: list[Scope]) -> dict[str, Any]:
    """What a start item carries so that the claim can check it without the function."""
    return {PAYLOAD_KEY: [to_json(scope) for scope in scopes]} if scopes else {}


def charges(item_payload: dict[str, Any], also: Sequence[Scope] = ()) -> bool:
    """Whether starting this item takes an authorization (a window of its own, or `also`)."""
    return bool(also) or bool(item_payload.get(PAYLOAD_KEY))


def check(
    conn: Connection,
    row: Any,
    item_payload: dict[str, Any],
    now: int,
    then: Then,
    also: Sequence[Scope] = (),
) -> Verdict:
    """Decide a due item: every window (its own, and `also`: a throttle's period window) has
    room, then `then` (the throttle) decides, and the windows are charged only if it lets the
    start go; else the item is deferred."""
    if not charges(item_payload, also):
        return then(conn, row, item_payload, now)
    specs = item_payload.get(PAYLOAD_KEY) or []
    declared = {spec["hash"]: Scope(**spec) for spec in specs}
    scopes = sorted([*declared.values(), *also], key=_by_hash)
    scopes = _sized(conn, scopes)
    for scope in scopes:
        if not dialect.try_lock(conn, dialect.GATE_KEY, f"{GateName.ROLLING_WINDOW}:{scope.hash}"):
            return BUSY
    decided = [_decide(conn, scope, now, (row.score, row.id)) for scope in scopes]
    combined = rw.combine([one.decision for one in decided])
    if not combined.admitted:
        return _defer(conn, row, [decided[i] for i in combined.save], combined)
    verdict = then(conn, row, item_payload, now)
    if verdict.start:
        for one in decided:
            _charge(conn, one)
        if not all(one.exists for one in decided):  # new scopes appear: clear out idle ones
            sweep(conn, now, SWEEP_ON_CREATE)
    return verdict


def _sized(conn: Connection, scopes: list[Scope]) -> list[Scope]:
    """Each scope at its live limit: an operator's change applies to the next authorization
    (the rule compares with entry `count - limit`, so a lowered limit never counts entries
    given before it twice, and a raised one finds the older entries it now looks at)."""
    ids = [scope.capacity for scope in scopes if scope.capacity]
    stored = capacity.meter_sizes(conn, ids) if ids else {}
    return [
        replace(scope, limit=stored[scope.capacity]) if scope.capacity in stored else scope
        for scope in scopes
    ]


def _by_hash(scope: Scope) -> str:
    return scope.hash  # one lock order for every claimer


def _decide(conn: Connection, scope: Scope, now: int, order: tuple[int, int]) -> _Decided:
    header = conn.execute(_HEADER, {"b_scope": scope.hash}).first()
    ledger = _ledger(header)
    wanted = list(rw.probes(scope.config, ledger))
    times: dict[int, int] = {}
    if wanted:
        found = conn.execute(_ENTRIES, {"b_scope": scope.hash, "b_seqs": wanted})
        times = {int(entry.seq): int(entry.at_ms) for entry in found}
    config, key = scope.config, scope.key
    decision = rw.decide(config, ledger, now, order, times, key, scope.rate_name, scope.gate)
    return _Decided(scope, header is not None, decision)


def _ledger(header: Any) -> rw.Ledger:
    if header is None:
        return rw.Ledger()
    return rw.Ledger(
        int(header.count),
        int(header.last_at),
        int(header.line_end),
        int(header.line_score),
        int(header.line_id),
    )


def _defer(conn: Connection, row: Any, seated: list[_Decided], combined: rw.Combined) -> Verdict:
    for one in seated:
        _save(conn, one)
    until = combined.until_ms
    # Waiting burns no attempt: only the due time moves; the score keeps its queue order.
    conn.execute(_DEFER, {"b_id": row.id, "b_at": until})
    if row.run_id is not None and combined.wait is not None:
        why = json.dumps(to_json(combined.wait))
        conn.execute(_WAITING, {"b_run": row.run_id, "b_why": why})
    return Verdict(start=False, defer_to=until)


def _charge(conn: Connection, one: _Decided) -> None:
    database.commit_soon(conn)  # the authorization is dated now; its run starts at the commit
    ledger = one.decision.ledger
    at = one.decision.at_ms
    scope = one.scope.hash
    conn.execute(_LOG, {"scope_hash": scope, "seq": ledger.count - 1, "at_ms": at})
    conn.execute(_PRUNE, {"b_scope": scope, "b_cut": at - one.scope.window_ms})
    _save(conn, one)


def _save(conn: Connection, one: _Decided) -> None:
    ledger = one.decision.ledger
    values = {
        "count": ledger.count,
        "last_at": ledger.last_at,
        "line_end": ledger.line_end,
        "line_score": ledger.line_score,
        "line_id": ledger.line_id,
        "expires_at": ledger.last_at + one.scope.window_ms,
    }
    if one.exists:
        conn.execute(_UPDATE_HEADER, {"b_scope": one.scope.hash, **values})
    else:
        conn.execute(_INSERT_HEADER, {"scope_hash": one.scope.hash, **values})


def sweep(conn: Connection, now: int, limit: int) -> int:
    """Delete up to `limit` scopes idle for a whole window (nothing of theirs can count any
    more), with their logs; how many went. Scopes another claimer holds are left for later."""
    gone = 0
    for idle in conn.execute(_IDLE, {"b_now": now, "b_limit": limit}).all():
        scope = str(idle.scope_hash)
        if not dialect.try_lock(conn, dialect.GATE_KEY, f"{GateName.ROLLING_WINDOW}:{scope}"):
            continue
        if conn.execute(_DROP_HEADER, {"b_scope": scope, "b_now": now}).rowcount:
            conn.execute(_DROP_LOG, {"b_scope": scope})
            gone += 1
    return gone


def log_times(conn: Connection, scope_hash: str) -> list[int]:
    """The scope's kept authorization times, oldest first (for audits and tests)."""
    query = (
        select(rolling_log.c.at_ms)
        .where(rolling_log.c.scope_hash == scope_hash)
        .order_by(rolling_log.c.seq)
    )
    return [int(at) for at in conn.execute(query).scalars()]
