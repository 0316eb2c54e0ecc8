"""Strict rolling windows, checked and charged when a run's start item is claimed.

A start item carries its scopes in its payload (admission evaluated their keys). The claim,
in its own transaction, asks `gates.rolling_window.decide` for every scope, each against its
header row (`rolling_scopes`) and at most two entries of its log (`rolling_log`, by number):
one indexed lookup, whatever the limit. Room in all scopes: the throttle is asked next, and
only if the start goes ahead is each scope charged (one log row). No room in one: nothing is
charged, and the item is deferred to the moment the last blocking entry leaves its window,
with its attempt untouched and its run saying which window waits until when.

On PostgreSQL each scope is decided under its advisory lock, so several processes share one
log; a claimer that finds one taken leaves the item for its next look.

One claim decides many starts of the same scopes, most of them refused while a flood lasts:
what it learns of a scope (its lock, live limit, header and log entries) is kept for the rest
of the claim (`Ledgers`), and its headers and deferrals are written together when the claim
is done with a partition (`Ledgers.flush`). A refusal is thus decided in memory: on
PostgreSQL, where each statement is a round trip, refusals at one round trip each took a
claim's whole charge span, and runs whose turn had come waited for claims that never reached
them (seconds late under a flood three times a window's limit). Storage stays bounded:
a charge prunes its scope's entries that left the window, and a scope idle for a whole window
is deleted (by retention, and by each newly created scope, two at a time).
"""

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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
# the entries wanted, and those just after them: the next seats in line wait for those
_ENTRIES = select(rolling_log.c.seq, rolling_log.c.at_ms).where(
    rolling_log.c.scope_hash == bindparam("b_scope"),
    rolling_log.c.seq.in_(bindparam("b_seqs", expanding=True))
    | rolling_log.c.seq.between(bindparam("b_from"), bindparam("b_to")),
)
ENTRIES_AHEAD = 128  # log entries read past the first one a decision needs (the next seats')
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


@dataclass
class _Header:
    exists: bool  # stored: updated at the flush (else inserted)
    ledger: rw.Ledger
    window_ms: int
    dirty: bool = False  # changed since it was read or flushed


@dataclass
class Ledgers:
    """What one claim's transaction knows of the scopes it has decided, valid while it holds
    their locks (to its end): their live limits, headers and log entries (None: pruned, left
    the window), and the writes not made yet (headers, deferred items, runs' reasons)."""

    locked: set[str] = field(default_factory=set)
    sizes: dict[str, int | None] = field(default_factory=dict)
    headers: dict[str, _Header] = field(default_factory=dict)
    times: dict[str, dict[int, int | None]] = field(default_factory=dict)
    deferred: list[dict[str, int]] = field(default_factory=list)
    reasons: list[dict[str, Any]] = field(default_factory=list)

    def flush(self, conn: Connection) -> None:
        """Write what was decided: before anything reads the items' due times (a partition's
        head) or the headers (a sweep)."""
        for scope_hash, header in self.headers.items():
            if header.dirty:
                _write_header(conn, scope_hash, header)
                header.exists, header.dirty = True, False
        if self.deferred:
            conn.execute(_DEFER, self.deferred)
            self.deferred = []
        if self.reasons:
            conn.execute(_WAITING, self.reasons)
            self.reasons = []


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
    ledgers: Ledgers | None = None,
) -> Verdict:
    """Decide a due item: every window (its own, and `also`: a throttle's period window) has
    room, then `then` (the throttle) decides, and the windows are charged only if it lets the
    start go; else the item is deferred. With `ledgers` (a claim deciding many items), what
    is written waits for its `flush`; without, it is written before this returns."""
    if not charges(item_payload, also):
        return then(conn, row, item_payload, now)
    own = ledgers is None
    known = Ledgers() if ledgers is None else ledgers
    verdict = _check(conn, row, item_payload, now, then, also, known)
    if own:
        known.flush(conn)
    return verdict


def _check(
    conn: Connection,
    row: Any,
    item_payload: dict[str, Any],
    now: int,
    then: Then,
    also: Sequence[Scope],
    known: Ledgers,
) -> Verdict:
    specs = item_payload.get(PAYLOAD_KEY) or []
    declared = {spec["hash"]: Scope(**spec) for spec in specs}
    scopes = sorted([*declared.values(), *also], key=_by_hash)
    scopes = _sized(conn, scopes, known)
    for scope in scopes:
        if scope.hash in known.locked:
            continue
        if not dialect.try_lock(conn, dialect.GATE_KEY, f"{GateName.ROLLING_WINDOW}:{scope.hash}"):
            return BUSY
        known.locked.add(scope.hash)
    decided = [_decide(conn, scope, now, (row.score, row.id), known) for scope in scopes]
    combined = rw.combine([one.decision for one in decided])
    if not combined.admitted:
        return _defer(row, [decided[i] for i in combined.save], combined, known)
    verdict = then(conn, row, item_payload, now)
    if verdict.start:
        for one in decided:
            _charge(conn, one, known)
        if not all(one.exists for one in decided):  # new scopes appear: clear out idle ones
            known.flush(conn)  # the sweep reads stored headers: ours are current
            sweep(conn, now, SWEEP_ON_CREATE)
    return verdict


def _sized(conn: Connection, scopes: list[Scope], known: Ledgers) -> list[Scope]:
    """Each scope at its live limit: an operator's change applies to the next authorization
    (the rule compares with entry `count - limit`, so a lowered limit never counts entries
    given before it twice, and a raised one finds the older entries it now looks at)."""
    ids = [s.capacity for s in scopes if s.capacity and s.capacity not in known.sizes]
    if ids:
        stored = capacity.meter_sizes(conn, ids)
        known.sizes.update({ident: stored.get(ident) for ident in ids})
    return [
        replace(scope, limit=size)
        if scope.capacity and (size := known.sizes.get(scope.capacity)) is not None
        else scope
        for scope in scopes
    ]


def _by_hash(scope: Scope) -> str:
    return scope.hash  # one lock order for every claimer


def _decide(
    conn: Connection, scope: Scope, now: int, order: tuple[int, int], known: Ledgers
) -> _Decided:
    header = known.headers.get(scope.hash)
    if header is None:
        found = conn.execute(_HEADER, {"b_scope": scope.hash}).first()
        header = _Header(found is not None, _ledger(found), scope.window_ms)
        known.headers[scope.hash] = header
    times = known.times.setdefault(scope.hash, {})
    missing = [n for n in rw.probes(scope.config, header.ledger) if n not in times]
    if missing:
        _read_entries(conn, scope.hash, missing, times)
    present = {n: at for n, at in times.items() if at is not None}
    config, key = scope.config, scope.key
    ledger = header.ledger
    decision = rw.decide(config, ledger, now, order, present, key, scope.rate_name, scope.gate)
    return _Decided(scope, header.exists, decision)


def _read_entries(
    conn: Connection, scope_hash: str, wanted: list[int], times: dict[int, int | None]
) -> None:
    """The entries wanted and the next ENTRIES_AHEAD after the first (those the seats after
    it wait for), into `times`; any not found there left the window (None)."""
    first = min(wanted)
    last = first + ENTRIES_AHEAD
    params = {"b_scope": scope_hash, "b_seqs": wanted, "b_from": first, "b_to": last}
    found = {int(entry.seq): int(entry.at_ms) for entry in conn.execute(_ENTRIES, params)}
    for n in [*wanted, *range(first, last + 1)]:
        times[n] = found.get(n)


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


def _defer(row: Any, seated: list[_Decided], combined: rw.Combined, known: Ledgers) -> Verdict:
    for one in seated:
        _save(one, known)
    until = combined.until_ms
    # Waiting burns no attempt: only the due time moves; the score keeps its queue order.
    known.deferred.append({"b_id": row.id, "b_at": until})
    if row.run_id is not None and combined.wait is not None:
        why = json.dumps(to_json(combined.wait))
        known.reasons.append({"b_run": row.run_id, "b_why": why})
    return Verdict(start=False, defer_to=until)


def _charge(conn: Connection, one: _Decided, known: Ledgers) -> None:
    database.commit_soon(conn)  # the authorization is dated now; its run starts at the commit
    ledger = one.decision.ledger
    at = one.decision.at_ms
    scope = one.scope.hash
    conn.execute(_LOG, {"scope_hash": scope, "seq": ledger.count - 1, "at_ms": at})
    cut = at - one.scope.window_ms
    conn.execute(_PRUNE, {"b_scope": scope, "b_cut": cut})
    times = known.times.setdefault(scope, {})
    for n, entry_at in times.items():
        if entry_at is not None and entry_at <= cut:
            times[n] = None  # pruned
    times[ledger.count - 1] = at
    _save(one, known)


def _save(one: _Decided, known: Ledgers) -> None:
    header = known.headers[one.scope.hash]
    header.ledger, header.window_ms, header.dirty = one.decision.ledger, one.scope.window_ms, True


def _write_header(conn: Connection, scope_hash: str, header: _Header) -> None:
    ledger = header.ledger
    values = {
        "count": ledger.count,
        "last_at": ledger.last_at,
        "line_end": ledger.line_end,
        "line_score": ledger.line_score,
        "line_id": ledger.line_id,
        "expires_at": ledger.last_at + header.window_ms,
    }
    if header.exists:
        conn.execute(_UPDATE_HEADER, {"b_scope": scope_hash, **values})
    else:
        conn.execute(_INSERT_HEADER, {"scope_hash": scope_hash, **values})


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
