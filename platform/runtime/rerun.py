"""Rerun: a new run of the same function from the same event(s), linked to the original.

Composed from the runtime's own admission steps. It skips the pre-run gates (idempotency,
rate limit, debounce, batching, singleton): a person asked for this run explicitly. The run
still takes its concurrency keys, throttle slot and priority like any other.
"""

from weir.platform.ids import new_id
from weir.platform.runtime.admission import start_run
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.scopes import ScopeKeyError
from weir.platform.runtime.tx import Tx
from weir.platform.store import event_records, run_records


class RerunError(Exception):
    pass


def rerun(tx: Tx, run_id: str) -> str:
    run = run_records.get_run(tx.conn, run_id)
    if run is None:
        raise RerunError(f"there is no run with id {run_id!r}")
    fn = tx.registry.by_id.get(run.function_id)
    if fn is None or fn.archived:
        raise RerunError("its function is no longer part of any synced app")
    ids = list(run.event_ids)
    payloads = event_records.load_event_payloads(tx.conn, ids)
    if not payloads:
        raise RerunError("its triggering events are no longer stored")
    cand = Candidate(
        fn, ids, payloads, tx.now, batch_id=run.batch_id, cron=run.cron, original_run_id=run.id
    )
    try:
        return start_run(tx, cand, new_id(tx.now))
    except ScopeKeyError as broken:
        raise RerunError(str(broken)) from None
