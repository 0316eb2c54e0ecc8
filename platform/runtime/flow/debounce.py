"""Debounce: one window per key in gate_state; a timer item starts the run with the last event.

A restarted window keeps its single timer: when that timer runs early it re-arms itself at the
window's new end (the pure algorithm says when), so a burst costs one queue item, not one each.
"""

import logging
from typing import Any

from weir.platform.foundation.vocabulary import EventOutcome, GateName, QueueKind
from weir.platform.gates import debounce
from weir.platform.gates.decisions import from_json, to_json
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.flow.gate_io import (
    BATCH,
    applies,
    gate_key,
    load_row,
    record_all,
)
from weir.platform.runtime.runs import enqueue_timer
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.flow import gate_state as gatestate
from weir.platform.store.records import events as event_records

TIMER = QueueKind.DEBOUNCE
log = logging.getLogger("weir.runtime")
SEQ_PER_MS = 1000  # arrival numbers: tied to the clock, so a new window never reuses one


def gate(tx: Tx, cand: Candidate) -> bool:
    option = cand.fn.config.debounce
    if option is None or not applies(cand, GateName.DEBOUNCE, option):
        return True
    key = gate_key(cand, GateName.DEBOUNCE, option.key)
    stored = load_row(tx, GateName.DEBOUNCE, key.hash)
    state = None if stored is None else from_json(debounce.DebounceState, stored)
    incoming = debounce.DebounceEvent(cand.event_ids[0], _ts(cand, tx.now), _seq(stored, tx.now))
    decision = debounce.on_event(option, state, incoming, tx.now)
    if decision.fire is not None and stored is not None:  # the old window is due: run it first
        released = _fire(tx, cand.fn.id, key.hash, stored)
        cand.released += [released] if released is not None else []
    _save(tx, cand, key.text, key.hash, decision.state, stored, incoming.seq)
    if stored is not None and decision.fire is None:
        _note_superseded(tx, cand, str(stored["event_id"]), decision.state.event_id)
    if decision.opened:
        _arm(tx, cand.fn.id, key.hash, decision.state.window_seq, decision.state.fire_at_ms)
    record_all(
        tx, cand, EventOutcome.DEBOUNCED, None, debounce.wait_reason(decision.state, key.text).words
    )
    return False


def _note_superseded(tx: Tx, cand: Candidate, before: str, kept: str) -> None:
    """The window keeps one event: the other one of the two is superseded (for its page)."""
    incoming = cand.event_ids[0]
    dropped = before if kept == incoming else incoming
    if dropped == kept:
        return
    words = f"superseded in the debounce window by event {kept}"
    event_records.record_outcome(
        tx.conn, dropped, cand.fn.id, EventOutcome.SUPERSEDED, None, words, tx.now
    )


def _ts(cand: Candidate, now: int) -> int:
    ts = cand.event.get("ts")
    return ts if isinstance(ts, int) and not isinstance(ts, bool) else now


def _seq(stored: dict[str, Any] | None, now: int) -> int:
    last = -1 if stored is None else int(stored.get("last_seq", -1))
    return max(last + 1, now * SEQ_PER_MS)


def _save(
    tx: Tx,
    cand: Candidate,
    key_text: str,
    key_hash: str,
    state: debounce.DebounceState,
    stored: dict[str, Any] | None,
    seq: int,
) -> None:
    ours = state.event_id == cand.event_ids[0]
    # The run gets the warnings of the event it will receive.
    warnings = list(cand.warnings) if ours or stored is None else stored.get("warnings", [])
    extra = {"key": key_text, "last_seq": seq, "warnings": warnings}
    gatestate.save(tx.conn, GateName.DEBOUNCE, key_hash, {**to_json(state), **extra}, None)


def _dedupe(key_hash: str, window_seq: int) -> str:
    return f"debounce:{key_hash}:{window_seq}"


def _arm(tx: Tx, fn_id: str, key_hash: str, window_seq: int, at: int) -> None:
    payload = {"key_hash": key_hash, "window_seq": window_seq}
    dedupe = _dedupe(key_hash, window_seq)
    enqueue_timer(tx, TIMER, at, payload, function_id=fn_id, dedupe=dedupe)


def on_timer(tx: Tx, item: q.Claimed) -> Candidate | None:
    """The window's run to admit, if its timer found it due."""
    key_hash = str(item.payload["key_hash"])
    window_seq = int(item.payload["window_seq"])
    stored = load_row(tx, GateName.DEBOUNCE, key_hash)
    state = None if stored is None else from_json(debounce.DebounceState, stored)
    result = debounce.on_timer(state, window_seq, tx.now)
    if result.retry_at_ms is not None:  # restarted since the timer was set
        _arm(tx, item.function_id or "", key_hash, window_seq, result.retry_at_ms)
    elif result.fire is not None and stored is not None:
        gatestate.drop(tx.conn, GateName.DEBOUNCE, key_hash)
        return _start(tx, item.function_id or "", stored)
    return None


def _fire(tx: Tx, fn_id: str, key_hash: str, stored: dict[str, Any]) -> Candidate | None:
    """An event found the window already due before its timer ran: start it now."""
    q.remove_by_dedupe(tx.conn, _dedupe(key_hash, int(stored["window_seq"])))
    return _start(tx, fn_id, stored)


def _start(tx: Tx, fn_id: str, stored: dict[str, Any]) -> Candidate | None:
    """The window's run, to admit with the last event it saw."""
    fn = tx.registry.by_id.get(fn_id)
    event = event_records.get_event(tx.conn, str(stored["event_id"]))
    if event is None:  # retention keeps a window's event: deleted by hand?
        log.warning(
            "debounce window of function %s lost its event %s: no run starts",
            fn_id,
            stored["event_id"],
        )
    if fn is None or fn.archived or event is None:
        return None  # the function is gone, or its event too: nothing to start
    payload = [event.payload]
    warnings = [str(w) for w in stored.get("warnings", [])]
    skip = frozenset(
        {BATCH, GateName.DEBOUNCE, GateName.RATE_LIMIT}
    )  # it passed those when it arrived
    return Candidate(fn, [event.id], payload, event.received_at, warnings, skip_gates=skip)
