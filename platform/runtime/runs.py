"""Run lifecycle: create, advance after a resolved step, finish, cancel.

Each function here is one piece of a single transaction (`Tx`); callers compose them so that a
step's result and whatever comes next commit together.
"""

import json
from dataclasses import field, replace
from typing import Any

from weir.platform.foundation.ids import new_id
from weir.platform.foundation.record_type import record
from weir.platform.foundation.trace_context import RUN_TRACE_KEY
from weir.platform.foundation.vocabulary import EventOutcome, QueueKind, RunStatus, SystemEvent
from weir.platform.observability import notes
from weir.platform.observability.errors import error_fields
from weir.platform.registry import Function
from weir.platform.runtime.tx import Ended, Tx
from weir.platform.store import queue as q
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records
from weir.platform.store.records import waits as wait_records
from weir.platform.store.records.runs import NewRun, Run

DISCOVERY = "step"
# Runs triggered by these emit none (no loops).
NO_FOLLOW_UP = (
    SystemEvent.FUNCTION_FINISHED,
    SystemEvent.FUNCTION_FAILED,
    SystemEvent.FUNCTION_CANCELLED,
)


@record
class RunPlan:
    """Everything admission decided about a new run."""

    fn: Function
    event_ids: list[str]
    events: list[dict[str, Any]]
    start_at: int
    score: int
    lane: str
    limits: tuple[q.SlotLimit, ...] = ()
    keys: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    batch_id: str | None = None
    cron: str | None = None
    original_run_id: str | None = None
    waiting: dict[str, Any] | None = None
    run_id: str | None = None
    start_payload: dict[str, Any] = field(default_factory=dict)  # checked when claimed
    held: bool = False  # queued behind its FIFO lane's holder: no call until the lane is its


def create_run(tx: Tx, plan: RunPlan) -> str:
    run_id = plan.run_id or new_id(tx.now)
    run_records.insert_run(tx.conn, _new_run(tx, plan, run_id))
    if len(plan.events) == len(plan.event_ids):  # every event at hand, as stored
        (tx.held_events if plan.held else tx.trigger_events)[run_id] = plan.events
    if plan.held:
        return run_id
    enqueue_call(
        tx,
        run_id,
        plan.fn.id,
        plan.lane,
        plan.limits,
        plan.start_at,
        plan.score,
        payload=plan.start_payload,
    )
    return run_id


def _new_run(tx: Tx, plan: RunPlan, run_id: str) -> NewRun:
    first = plan.events[0] if plan.events else {}
    invoked = first.get("name") == SystemEvent.FUNCTION_INVOKED
    # only an invoke reads `data`: a large event's is never parsed here (ingest.Document)
    data = first.get("data") if invoked else None
    inngest_meta = data.get("_inngest", {}) if isinstance(data, dict) else {}
    keys = {**plan.keys, "limits": [list(x) for x in plan.limits]}
    if tx.trace is not None:
        keys[RUN_TRACE_KEY] = tx.trace
    return NewRun(
        id=run_id,
        function_id=plan.fn.id,
        event_ids=plan.event_ids,
        created_at=tx.now,
        score=plan.score,
        lane=plan.lane,
        keys=keys,
        waiting=plan.waiting,
        warnings=plan.warnings,
        batch_id=plan.batch_id,
        cron=plan.cron,
        original_run_id=plan.original_run_id,
        correlation_id=inngest_meta.get("correlation_id") if invoked else None,
    )


def enqueue_call(
    tx: Tx,
    run_id: str,
    fn_id: str,
    lane: str,
    limits: tuple[q.SlotLimit, ...],
    at: int,
    score: int,
    step_id: str = DISCOVERY,
    dedupe: str | None = None,
    payload: dict[str, Any] | None = None,
) -> None:
    item = q.NewItem(
        kind=QueueKind.EXEC,
        available_at=at,
        score=score if at <= tx.now else at,
        lane=lane,
        run_id=run_id,
        function_id=fn_id,
        step_id=step_id,
        limits=limits,
        dedupe=dedupe,
        payload=payload or {},
    )
    if _continues(tx, item):
        # The caller that applied this run's last answer makes its next call at once: claimed
        # here, in the same transaction, instead of by a separate claim.
        tx.next_call.claimed = _claim_next(tx, item)
        if tx.next_call.claimed is not None:
            return
    item_id = q.enqueue(tx.conn, item)
    if item_id is not None:
        tx.added(item_id)


def _claim_next(tx: Tx, item: q.NewItem) -> q.Claimed | None:
    """The run's next call, leased to the caller: in the row of the call it has just finished
    when that row is kept (`NextCall.spare`), else a new one."""
    going = tx.next_call
    spare = going.spare
    if spare is None or spare.lane != item.lane:
        return q.enqueue_claimed(tx.conn, item, tx.now, going.lease_ms)
    going.spare = None
    return q.enqueue_in_place(tx.conn, spare, item, tx.now, going.lease_ms)


def _continues(tx: Tx, item: q.NewItem) -> bool:
    """The item may be claimed by this transaction: its run is the one being continued, it is
    due now, needs no concurrency slot or start throttle, and no other call was claimed so."""
    return (
        tx.next_call.run_id is not None
        and tx.next_call.run_id == item.run_id
        and tx.next_call.claimed is None
        and item.available_at <= tx.now
        and not item.limits
        and not item.payload
    )


def enqueue_timer(
    tx: Tx,
    kind: QueueKind,
    at: int,
    payload: dict[str, Any],
    *,
    run_id: str | None = None,
    function_id: str | None = None,
    dedupe: str | None = None,
) -> bool:
    item = q.NewItem(
        kind=kind,
        available_at=at,
        score=at,
        lane=q.TIMER_LANE,
        run_id=run_id,
        function_id=function_id,
        payload=payload,
        dedupe=dedupe,
    )
    item_id = q.enqueue(tx.conn, item)
    if item_id is None:
        return False
    tx.added(item_id)
    return True


def schedule_discovery(tx: Tx, run: Run) -> None:
    """Call the function again from the top; one queued discovery per run is enough."""
    enqueue_call(
        tx,
        run.id,
        run.function_id,
        run.lane,
        run.limits,
        tx.now,
        run.score,
        dedupe=f"discover:{run.id}",
    )


@record
class StepResult:
    """A step's result to store: its id, memo, the op that produced it and its name."""

    step_id: str
    memo: Any
    op: str
    name: str = ""


def resolve_step(
    tx: Tx,
    run_id: str,
    step_id: str,
    memo: Any,
    *,
    op: str,
    name: str = "",
    current: Run | None = None,
) -> bool:
    """Save a step's result and move the run on; False if the run has ended or the step was
    already resolved (a result, once committed, is never replaced). `current`: the run as it
    stands in this transaction, if the caller holds it (saves reading it again)."""
    run = current if current is not None else run_records.lock_run(tx.conn, run_id)
    if run is None or run.ended:
        return False
    saved = save_results(tx, run, [StepResult(step_id, memo, op, name)])
    if saved is None:
        return False
    move_on(tx, run, saved)
    return True


def save_results(tx: Tx, run: Run, results: list[StepResult]) -> Run | None:
    """Store results in order, each once (one never replaces another); the run as it then
    stands, or None if every one was stored before. One INSERT for the results (a few for
    hundreds), one write of the run's counters."""
    texts = {r.step_id: json.dumps(r.memo, separators=(",", ":")) for r in reversed(results)}
    memos = [
        step_records.NewMemo(r.step_id, r.name, r.op, texts.pop(r.step_id))
        for r in results
        if r.step_id in texts  # the first of a repeated id counts, as a later save would
    ]
    saved = step_records.save_memos(tx.conn, run.id, memos, run.step_count, tx.now)
    if not saved:
        return None
    size = run.state_bytes + sum(len(m.memo) for m in memos if m.step_id in saved)
    for m in memos:
        if m.step_id in saved:
            note = run_note(notes.STEP_SAVED, run, step_id=m.step_id, op=m.op, name=m.name)
            tx.notes.append(note)
    seq = max(saved.values()) + 1
    pending = tuple(p for p in run.pending if p.id not in saved)
    force_plan = bool(pending) and run.force_plan
    run_records.step_saved(
        tx.conn,
        run.id,
        step_count=seq,
        state_bytes=size,
        pending=pending,
        force_plan=force_plan,
    )
    return replace(run, step_count=seq, state_bytes=size, pending=pending, force_plan=force_plan)


def move_on(tx: Tx, before: Run, after: Run) -> None:
    """After saved results: call the function again once no step of its group is open (a
    race's first result is enough); a call claimed here knows the run as it now stands."""
    if not after.pending or any(p.race for p in before.pending):
        schedule_discovery(tx, after)
    if tx.next_call.claimed is not None and tx.next_call.claimed.run_id == after.id:
        tx.next_call.run = after


def note_effect(tx: Tx, event_id: str, run_id: str, effect: EventOutcome, words: str) -> None:
    """What an event did to a run that already existed (resumed it, ...), for the event's page."""
    run = run_records.get_run(tx.conn, run_id)
    if run is not None:
        fn_id = run.function_id
        event_records.record_outcome(tx.conn, event_id, fn_id, effect, run_id, words, tx.now)


def run_note(what: str, run: Run, *, step_id: str | None = None, **fields: Any) -> notes.Note:
    """A note about `run`, carrying its ids (the first event is the one that triggered it)."""
    return notes.Note(
        what,
        run_id=run.id,
        function_id=run.function_id,
        event_id=run.trigger_id,
        step_id=step_id,
        fields=fields,
    )


def mark_started(tx: Tx, run: Run, at: int) -> Run:
    """A call began at `at`: its first call starts the run; any call ends its waiting.
    Returns the run as it now stands."""
    if starts_at(tx, run, at) is not None:
        run_records.mark_started(tx.conn, run.id, at)
        return replace(run, status=RunStatus.RUNNING, started_at=at, waiting=None)
    if run.waiting is not None:
        run_records.set_waiting(tx.conn, run.id, None)
        return replace(run, waiting=None)
    return run


def starts_at(tx: Tx, run: Run, at: int) -> int | None:
    """`at` if a call that began then is the run's first (noted as its start); else None."""
    if run.started_at is not None:
        return None
    tx.notes.append(run_note(notes.RUN_STARTED, run))
    return at


def first_event(tx: Tx, run_id: str) -> dict[str, Any]:
    """The event that triggered the run (the first of a batch); {} if it is gone."""
    run = run_records.get_run(tx.conn, run_id)
    ids = list(run.event_ids[:1]) if run is not None else []
    found = event_records.load_event_payloads(tx.conn, ids)
    return found[0] if found else {}


def finish_run(
    tx: Tx,
    run_id: str,
    status: RunStatus,
    output: Any,
    *,
    keep_item: int | None = None,
    error: dict[str, Any] | None = None,
    run: Run | None = None,
    started_at: int | None = None,
    http_status: int = 0,
    no_retry: bool = False,
) -> bool:
    """End a run once: drop its queued work and waits; what the end sets off follows. A caller that
    has just read the run passes it to save a round trip (and `started_at` if the run starts and
    ends at once); `http_status` is that of the app's answer that failed the run, if any, and
    `no_retry` whether that answer said not to retry it."""
    run = run if run is not None else run_records.get_run(tx.conn, run_id)
    if run is None or run.ended:
        return False
    if tx.next_call.run is not None and tx.next_call.run.id == run_id:
        tx.next_call.run = None  # its next call was claimed here, then it ended: read afresh
    status = RunStatus(status)
    stored = error if status != RunStatus.COMPLETED else output
    run_records.finish(tx.conn, run_id, status, tx.now, stored, started_at=started_at)
    tx.calls_in_flight[run_id] = q.remove_run_items(tx.conn, run_id, keep_item, tx.now)
    said = {"status": status, **error_fields(error)}
    tx.notes.append(run_note(notes.RUN_FINISHED, run, **said))
    wait_records.delete_run_waits(tx.conn, run_id)
    # What the end sets off (a parent's invoke result, finished events, a released lock) is
    # applied by `finish_hooks.settle` once the transition's own work is done.
    tx.ended.append(Ended(run, status, output, error, http_status, no_retry))
    return True


def cancel_run(tx: Tx, run_id: str, reason: str) -> bool:
    error = {"name": "RunCancelled", "message": reason}
    return finish_run(tx, run_id, RunStatus.CANCELLED, None, error=error)
