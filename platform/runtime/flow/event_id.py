"""Run idempotency by event id: events sharing an `id` start at most one run per function in
24 h. Checked right after batching (a duplicate spends no rate budget and joins no window);
the key is taken only when a run is really created."""

from weir.platform.foundation.vocabulary import EventOutcome
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.tx import Tx
from weir.platform.store.flow import run_keys
from weir.platform.store.records import events as event_records

TTL_MS = 24 * 3600 * 1000


def _key(cand: Candidate) -> str | None:
    if cand.batch_id is not None or cand.original_run_id is not None or cand.cron is not None:
        return None  # a batch, a rerun or a cron tick is its own identity
    return f"event:{cand.event.get('id') or cand.event_ids[0]}"


def _fresh(tx: Tx, cand: Candidate) -> bool:
    """The event arrived in this transaction and its id is the one Weir has just given it (the
    sender set none): nobody has seen that id yet, so no run can hold its key and there is
    nothing to look up (the key is still taken, for later events carrying the same id)."""
    return cand.received_at == tx.now and cand.event.get("id") == cand.event_ids[0]


def gate(tx: Tx, cand: Candidate) -> bool:
    key = _key(cand)
    if key is None or _fresh(tx, cand):
        return True
    holder = run_keys.run_key_holder(tx.conn, cand.fn.id, key, tx.now)
    if holder is None:
        return True
    words = (
        f"an event with id {cand.event.get('id')!r} already started run {holder} in the last 24 h"
    )
    event_records.record_outcome(
        tx.conn,
        cand.event_ids[0],
        cand.fn.id,
        EventOutcome.DUPLICATE_EVENT_ID,
        holder,
        words,
        tx.now,
    )
    return False


def claim(tx: Tx, cand: Candidate, run_id: str) -> None:
    key = _key(cand)
    if key is not None:
        run_keys.claim_run_key(tx.conn, cand.fn.id, key, run_id, tx.now, TTL_MS)
