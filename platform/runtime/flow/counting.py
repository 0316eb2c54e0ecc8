"""Idempotency, rate limit and throttle: the gates that count (GCRA meters, 24 h keys)."""

from dataclasses import replace

from weir.platform.foundation.vocabulary import EventOutcome, GateName
from weir.platform.gates import idempotency, rate_limit, throttle
from weir.platform.gates.decisions import to_json
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.flow.gate_io import (
    applies,
    gate_key,
    load_meter,
    load_state,
    record_all,
    save_meter,
)
from weir.platform.runtime.runs import RunPlan
from weir.platform.runtime.tx import Tx
from weir.platform.store.flow import gate_state, start_throttle


def idempotency_gate(tx: Tx, cand: Candidate) -> bool:
    """One run per key per 24 h: skip while another run holds the key (claimed at creation)."""
    expr = cand.fn.config.idempotency
    if expr is None or not applies(cand, GateName.IDEMPOTENCY, expr):
        return True
    key = gate_key(cand, GateName.IDEMPOTENCY, expr)
    held = load_state(tx, GateName.IDEMPOTENCY, key.hash, idempotency.IdempotencyRecord)
    decision = idempotency.claim(held, key.text, "", tx.now)
    if decision.skip is None:
        return True
    record_all(tx, cand, EventOutcome.IDEMPOTENT, decision.skip.holder_run_id, decision.skip.words)
    return False


def claim_idempotency(tx: Tx, cand: Candidate, run_id: str) -> None:
    """The new run takes its key; done once the run exists so the record can name it."""
    expr = cand.fn.config.idempotency
    if expr is None:
        return
    key = gate_key(cand, GateName.IDEMPOTENCY, expr)
    held = load_state(tx, GateName.IDEMPOTENCY, key.hash, idempotency.IdempotencyRecord)
    decision = idempotency.claim(held, key.text, run_id, tx.now)
    if decision.admitted:
        record = decision.record
        gate_state.save(tx.conn, GateName.IDEMPOTENCY, key.hash, to_json(record), record.expires_ms)


def rate_limit_gate(tx: Tx, cand: Candidate) -> bool:
    """GCRA on events: over the budget the event is skipped. An idempotency key replaces it."""
    limit = cand.fn.config.rate_limit
    if limit is None or cand.fn.config.idempotency is not None:
        return True
    if not applies(cand, GateName.RATE_LIMIT, limit):
        return True
    key = gate_key(cand, GateName.RATE_LIMIT, limit.key)
    meter = load_meter(tx, GateName.RATE_LIMIT, key.hash)
    decision = rate_limit.admit_event(limit, meter, tx.now, key.text)
    if decision.skip is None:
        save_meter(tx, GateName.RATE_LIMIT, key.hash, decision.state)
        return True
    record_all(tx, cand, EventOutcome.RATE_LIMITED, None, decision.skip.words)
    return False


def place_throttled(tx: Tx, cand: Candidate, plan: RunPlan) -> RunPlan:
    """Reserve the run's start slot now, so waiting starts of a key keep arrival order; the
    start item carries the throttle, so that the claim checks the start itself too."""
    limit = cand.fn.config.throttle
    if limit is None:
        return plan
    key = gate_key(cand, GateName.THROTTLE, limit.key)
    meter = load_meter(tx, GateName.THROTTLE, key.hash)
    decision = throttle.schedule_start(limit, meter, tx.now, key.text)
    save_meter(tx, GateName.THROTTLE, key.hash, decision.state)
    # A run scheduled later (its event's ts) keeps that time; the claim checks the throttle.
    later = plan.start_at > decision.start_ms
    waiting = plan.waiting if later or decision.wait is None else to_json(decision.wait)
    return replace(
        plan,
        start_at=max(plan.start_at, decision.start_ms),
        waiting=waiting,
        keys={**plan.keys, GateName.THROTTLE.value: {"key": key.text, "hash": key.hash}},
        start_payload=start_throttle.payload(limit, key.text, key.hash),
    )
