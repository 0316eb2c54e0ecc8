"""Idempotency: at most one run per key per function within 24 hours.

The same rule serves the `idempotency` expression and events that share an `id`: the caller
supplies the key text. An expired record counts as absent.
"""

from __future__ import annotations

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import GateName
from weir.platform.gates.decisions import MS_PER_DAY, SkipReason, clock_text, key_text

TTL_MS = MS_PER_DAY


@record(slots=True)
class IdempotencyRecord:
    key: str
    run_id: str
    expires_ms: int


@record(slots=True)
class IdempotencyDecision:
    """Admitted: `record` is the new one to store. Skipped: the existing record and why."""

    admitted: bool
    record: IdempotencyRecord
    skip: SkipReason | None


def is_live(record: IdempotencyRecord | None, now_ms: int) -> bool:
    return record is not None and now_ms < record.expires_ms


def _skip_reason(record: IdempotencyRecord) -> SkipReason:
    words = (
        f"{GateName.IDEMPOTENCY}: run {record.run_id} already started{key_text(record.key)}; "
        f"the key is free again at {clock_text(record.expires_ms)}"
    )
    return SkipReason(
        gate=GateName.IDEMPOTENCY,
        key=record.key,
        words=words,
        retry_at_ms=record.expires_ms,
        holder_run_id=record.run_id,
    )


def claim(
    existing: IdempotencyRecord | None, key: str, run_id: str, now_ms: int
) -> IdempotencyDecision:
    """Let `run_id` take `key` for 24 h unless a live record already holds it."""
    if existing is not None and is_live(existing, now_ms):
        return IdempotencyDecision(False, existing, _skip_reason(existing))
    return IdempotencyDecision(True, IdempotencyRecord(key, run_id, now_ms + TTL_MS), None)
