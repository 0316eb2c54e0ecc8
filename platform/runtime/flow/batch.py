"""Batching: the open batch of a key lives in gate_state with its event ids, in arrival order;
it flushes into one run when full, or from its timer item at first event + timeout."""

import logging
from typing import Any

from weir.platform.foundation.ids import new_id
from weir.platform.foundation.vocabulary import EventOutcome, QueueKind
from weir.platform.functions import Batching
from weir.platform.gates import batching
from weir.platform.gates.decisions import clock_text, from_json, key_text, to_json
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.flow.gate_io import BATCH, applies, gate_key, load_row, record_all
from weir.platform.runtime.keys import EvaluatedKey, expression_holds
from weir.platform.runtime.runs import enqueue_timer
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.flow import gate_state as gatestate
from weir.platform.store.records import events as event_records

TIMER = QueueKind.BATCH
log = logging.getLogger("weir.runtime")


def gate(tx: Tx, cand: Candidate) -> bool:
    option = cand.fn.config.batching
    if option is None or not applies(cand, BATCH, option):
        return True
    if not expression_holds(option.if_expr, {"event": cand.event}):
        return True  # `if` is false: this event runs on its own
    _collect(tx, cand, option)
    return False


def _collect(tx: Tx, cand: Candidate, option: Batching) -> None:
    key = gate_key(cand, BATCH, option.key)
    stored = load_row(tx, BATCH, key.hash)
    state = None if stored is None else from_json(batching.BatchState, stored)
    decision = batching.on_event(option, state, tx.now, new_id(tx.now))
    members = _members(stored, decision, cand)
    opened = decision.timer_at_ms is not None  # this event is the first of a new batch
    _save(tx, key, decision, members, list(cand.warnings) if opened else _warnings(stored))
    if decision.timer_at_ms is not None:
        _arm(tx, cand.fn.id, key.hash, str(decision.batch_id), decision.timer_at_ms)
    record_all(tx, cand, EventOutcome.BATCHED, None, _words(option, decision, key.text))
    for flush in decision.flushes:  # the stored batch: due, or just filled by this event
        released = _flush(
            tx, cand.fn.id, flush.batch_id, members[flush.batch_id], _warnings(stored)
        )
        cand.released += [released] if released is not None else []


def _members(
    stored: dict[str, Any] | None, decision: batching.BatchDecision, cand: Candidate
) -> dict[str, list[str]]:
    """Event ids per batch id: the stored open batch, and this event in the batch it joined."""
    members: dict[str, list[str]] = {}
    if stored is not None:
        members[str(stored["batch_id"])] = [str(e) for e in stored.get("event_ids", [])]
    joined = str(decision.batch_id)
    members[joined] = [*members.get(joined, []), cand.event_ids[0]]
    return members


def _warnings(stored: dict[str, Any] | None) -> list[str]:
    """A batch's run carries the key warnings of its first event."""
    return [] if stored is None else [str(w) for w in stored.get("warnings", [])]


def _save(
    tx: Tx,
    key: EvaluatedKey,
    decision: batching.BatchDecision,
    members: dict[str, list[str]],
    warnings: list[str],
) -> None:
    state = decision.state
    if state is None:  # flushed full: nothing stays open
        gatestate.drop(tx.conn, BATCH, key.hash)
        return
    extra = {"key": key.text, "event_ids": members[state.batch_id], "warnings": warnings}
    gatestate.save(tx.conn, BATCH, key.hash, {**to_json(state), **extra}, None)


def _words(option: Batching, decision: batching.BatchDecision, key: str) -> str:
    at = "" if decision.state is None else f" or at {clock_text(decision.state.flush_at_ms)}"
    return (
        f"batching: event {decision.position + 1} of batch {decision.batch_id}{key_text(key)}; "
        f"the batch runs at {option.max_size} events{at}"
    )


def _dedupe(batch_id: str) -> str:
    return f"batch:{batch_id}"


def _arm(tx: Tx, fn_id: str, key_hash: str, batch_id: str, at: int) -> None:
    payload = {"key_hash": key_hash, "batch_id": batch_id}
    enqueue_timer(tx, TIMER, at, payload, function_id=fn_id, dedupe=_dedupe(batch_id))


def on_timer(tx: Tx, item: q.Claimed) -> Candidate | None:
    """The batch's run to admit, if its timer found it still open."""
    key_hash = str(item.payload["key_hash"])
    batch_id = str(item.payload["batch_id"])
    stored = load_row(tx, BATCH, key_hash)
    state = None if stored is None else from_json(batching.BatchState, stored)
    result = batching.on_timer(state, batch_id, tx.now)
    if result.flush is None or stored is None:
        return None  # stale: flushed full, or replaced by a newer batch
    gatestate.drop(tx.conn, BATCH, key_hash)
    events = [str(e) for e in stored.get("event_ids", [])]
    return _flush(tx, item.function_id or "", batch_id, events, _warnings(stored))


def _flush(
    tx: Tx, fn_id: str, batch_id: str, event_ids: list[str], warnings: list[str]
) -> Candidate | None:
    """One run with every event of the batch, to admit; it does not enter batching again."""
    q.remove_by_dedupe(tx.conn, _dedupe(batch_id))
    fn = tx.registry.by_id.get(fn_id)
    events = event_records.load_event_payloads(tx.conn, event_ids)
    if len(events) < len(event_ids):  # retention keeps a window's events: deleted by hand?
        log.warning(
            "batch %s of function %s lost %d of its %d events before it ran",
            batch_id,
            fn_id,
            len(event_ids) - len(events),
            len(event_ids),
        )
    if fn is None or fn.archived or not events:
        return None
    skip = frozenset({BATCH})
    return Candidate(fn, event_ids, events, tx.now, warnings, batch_id=batch_id, skip_gates=skip)
