"""Rerun: a new run of the same function from the same event(s), linked to the original.

A rerun "from a step" keeps the memoized results of the steps the original completed before
that step (in completion order): the new run replays them and runs that step and everything
after it again.

Composed from the runtime's own admission steps. It skips the pre-run gates (idempotency,
rate limit, debounce, batching, singleton): a person asked for this run explicitly. The run
still takes its concurrency keys, throttle slot and priority like any other.
"""

import json

from weir.platform.foundation.ids import new_id
from weir.platform.runtime.admission import start_run
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.scopes import ScopeKeyError
from weir.platform.runtime.tx import Tx
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records


class RerunError(Exception):
    pass


def rerun(tx: Tx, run_id: str, from_step: str | None = None) -> str:
    """The new run's id; with `from_step` (a step id or name of the original), the steps
    completed before it are kept."""
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
    kept = _steps_before(tx, run_id, from_step) if from_step is not None else []
    try:
        new_run = start_run(tx, cand, new_id(tx.now))
    except ScopeKeyError as broken:
        raise RerunError(str(broken)) from None
    _keep(tx, new_run, kept)
    return new_run


def _steps_before(tx: Tx, run_id: str, from_step: str) -> list[step_records.Step]:
    done = step_records.list_steps(tx.conn, run_id)
    chosen = next((s for s in done if s.step_id == from_step), None)
    chosen = chosen or next((s for s in done if s.name and s.name == from_step), None)
    if chosen is None:
        names = ", ".join(s.name or s.step_id for s in done) or "none"
        raise RerunError(f"it has no completed step {from_step!r} (its steps: {names})")
    return [s for s in done if s.seq < chosen.seq]


def _keep(tx: Tx, run_id: str, kept: list[step_records.Step]) -> None:
    """Copy the kept results onto the new run, as though it had just completed them."""
    size = 0
    for seq, step in enumerate(kept):
        text = json.dumps(step.memo, separators=(",", ":"))
        step_records.save_memo(tx.conn, run_id, step.step_id, seq, step.name, step.op, text, tx.now)
        size += len(text)
    if kept:
        run_records.step_saved(
            tx.conn, run_id, step_count=len(kept), state_bytes=size, pending=[], force_plan=False
        )
