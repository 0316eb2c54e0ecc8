"""Idempotency: one run per key per 24 hours."""

from __future__ import annotations

from weir.platform.gates import idempotency
from weir.platform.gates.decisions import MS_PER_DAY

NOON = 1_767_268_800_000


def test_first_claim_admits_and_records_a_24h_expiry() -> None:
    decision = idempotency.claim(None, "order-7", "run-1", NOON)
    assert decision.admitted
    assert decision.skip is None
    assert decision.record == idempotency.IdempotencyRecord("order-7", "run-1", NOON + MS_PER_DAY)


def test_live_record_skips_naming_the_run_and_when_the_key_frees() -> None:
    record = idempotency.claim(None, "order-7", "run-1", NOON).record
    decision = idempotency.claim(record, "order-7", "run-2", NOON + MS_PER_DAY - 1)
    assert not decision.admitted
    assert decision.record == record
    assert decision.skip is not None
    assert decision.skip.holder_run_id == "run-1"
    assert decision.skip.retry_at_ms == NOON + MS_PER_DAY
    assert decision.skip.words == (
        "idempotency: run run-1 already started (key 'order-7'); "
        "the key is free again at 12:00:00.000"
    )


def test_expired_record_is_replaced() -> None:
    record = idempotency.claim(None, "k", "run-1", NOON).record
    decision = idempotency.claim(record, "k", "run-2", NOON + MS_PER_DAY)
    assert decision.admitted
    assert decision.record == idempotency.IdempotencyRecord("k", "run-2", NOON + 2 * MS_PER_DAY)


def test_is_live() -> None:
    record = idempotency.IdempotencyRecord("k", "r", NOON)
    assert idempotency.is_live(record, NOON - 1)
    assert not idempotency.is_live(record, NOON)
    assert not idempotency.is_live(None, NOON)
