"""Run idempotency by event id: events sharing an `id` start at most one run per function in
24 h. Checked right after batching (a duplicate spends no rate budget and joins no window);
the key is taken only when a run is really created.

An event the sender gave no id gets Weir's own, new one: no run key is written for it (one
statement fewer for nearly every run). A later event that carries such an id as its own is
matched against the runs linked to the event stored under it instead (`_started_by`)."""

from weir.platform.ids import is_weir_id
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.tx import Tx
from weir.platform.store import event_records, run_keys, run_records
from weir.platform.vocabulary import EventOutcome

TTL_MS = 24 * 3600 * 1000


def _event_id(cand: Candidate) -> str | None:
    """The id the candidate's event goes by (the sender's, else Weir's); None where the run
    is not deduplicated by it."""
    if cand.batch_id is not None or cand.original_run_id is not None or cand.cron is not None:
        return None  # a batch, a rerun or a cron tick is its own identity
    return str(cand.event.get("id") or cand.event_ids[0])


def _key(cand: Candidate) -> str | None:
    event_id = _event_id(cand)
    return None if event_id is None else f"event:{event_id}"


def _fresh(tx: Tx, cand: Candidate) -> bool:
    """The event arrived in this transaction and its id is the one Weir has just given it (the
    sender set none): nobody has seen that id yet, so no run can hold its key and there is
    nothing to look up, nor a key to take (`_started_by` finds its run for a later event
    carrying that id)."""
    return cand.received_at == tx.now and cand.event.get("id") == cand.event_ids[0]


def _started_by(tx: Tx, cand: Candidate, event_id: str) -> str | None:
    """The run that the event Weir stored under `event_id` started for this function within
    the last 24 h, as a fresh event (with no run key: `claim`)."""
    if not is_weir_id(event_id):
        return None
    return run_records.run_started_by(tx.conn, event_id, cand.fn.id, tx.now - TTL_MS)


def gate(tx: Tx, cand: Candidate) -> bool:
    event_id = _event_id(cand)
    if event_id is None or _fresh(tx, cand):
        return True
    holder = run_keys.run_key_holder(tx.conn, cand.fn.id, f"event:{event_id}", tx.now)
    if holder is None:
        holder = _started_by(tx, cand, event_id)
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
    if key is not None and not _fresh(tx, cand):
        run_keys.claim_run_key(tx.conn, cand.fn.id, key, run_id, tx.now, TTL_MS)
