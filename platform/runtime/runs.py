"""Run lifecycle: create, advance after a resolved step, finish, cancel.

Each function here is one piece of a single transaction (`Tx`); callers compose them so that a
step's result and whatever comes next commit together.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from weir.platform.ids import new_id
from weir.platform.observability import notes
from weir.platform.observability.errors import error_fields
from weir.platform.registry import Function
from weir.platform.runtime.tx import Ended, Tx
from weir.platform.store import queue as q
from weir.platform.store import records
from weir.platform.vocabulary import ENDED, QueueKind, RunStatus, SystemEvent

DISCOVERY = "step"
# Runs triggered by these emit none (no loops).
NO_FOLLOW_UP = (
    SystemEvent.FUNCTION_FINISHED,
    SystemEvent.FUNCTION_FAILED,
    SystemEvent.FUNCTION_CANCELLED,
)


@dataclass(frozen=True)
class RunPlan:
    """Everything admission decided about a new run."""

    fn: Function
    event_ids: list[str]
    events: list[dict[str, Any]]
    start_at: int
    score: int
    lane: str
    limits: tuple[tuple[str, int], ...] = ()
    keys: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    batch_id: str | None = None
    cron: str | None = None
    original_run_id: str | None = None
    waiting: dict[str, Any] | None = None
    run_id: str | None = None
    start_payload: dict[str, Any] = field(default_factory=dict)  # checked when claimed


def create_run(tx: Tx, plan: RunPlan) -> str:
    run_id = plan.run_id or new_id(tx.now)
    records.insert_run(tx.conn, _run_row(tx, plan, run_id), dict.fromkeys(plan.event_ids))
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


def _run_row(tx: Tx, plan: RunPlan, run_id: str) -> dict[str, Any]:
    first = plan.events[0] if plan.events else {}
    inngest_meta = (
        first.get("data", {}).get("_inngest", {}) if isinstance(first.get("data"), dict) else {}
    )
    return {
        "id": run_id,
        "function_id": plan.fn.id,
        "status": RunStatus.QUEUED,
        "event_ids": json.dumps(plan.event_ids),
        "batch_id": plan.batch_id,
        "cron": plan.cron,
        "original_run_id": plan.original_run_id,
        "correlation_id": inngest_meta.get("correlation_id")
        if first.get("name") == SystemEvent.FUNCTION_INVOKED
        else None,
        "created_at": tx.now,
        "score": plan.score,
        "lane": plan.lane,
        "keys": json.dumps({**plan.keys, "limits": [list(x) for x in plan.limits]}),
        "waiting": json.dumps(plan.waiting) if plan.waiting else None,
        "warnings": json.dumps(plan.warnings),
    }


def enqueue_call(
    tx: Tx,
    run_id: str,
    fn_id: str,
    lane: str,
    limits: tuple[tuple[str, int], ...],
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
    if q.enqueue(tx.conn, item) is not None:
        tx.enqueued += 1


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
    if q.enqueue(tx.conn, item) is None:
        return False
    tx.enqueued += 1
    return True


def run_limits(run: Any) -> tuple[tuple[str, int], ...]:
    return tuple((str(k), int(v)) for k, v in json.loads(run.keys).get("limits", []))


def schedule_discovery(tx: Tx, run: Any) -> None:
    """Call the function again from the top; one queued discovery per run is enough."""
    enqueue_call(
        tx,
        run.id,
        run.function_id,
        run.lane,
        run_limits(run),
        tx.now,
        run.score,
        dedupe=f"discover:{run.id}",
    )


def resolve_step(tx: Tx, run_id: str, step_id: str, memo: Any, *, op: str, name: str = "") -> bool:
    """Save a step's result and move the run on; False if the run has ended or the step was
    already resolved (a result, once committed, is never replaced)."""
    run = records.get_run(tx.conn, run_id)
    if run is None or run.status in ENDED:
        return False
    seq = run.step_count
    text = json.dumps(memo, separators=(",", ":"))
    if not records.save_memo(tx.conn, run_id, step_id, seq, name, op, text, tx.now):
        return False
    pending = [p for p in json.loads(run.pending) if p["id"] != step_id]
    race = any(p.get("race") for p in json.loads(run.pending))
    records.update_run(
        tx.conn,
        run_id,
        step_count=seq + 1,
        pending=json.dumps(pending),
        state_bytes=run.state_bytes + len(text),
        force_plan=bool(pending) and run.force_plan,
    )
    if not pending or race:
        schedule_discovery(tx, run)
    tx.notes.append(run_note(notes.STEP_SAVED, run, step_id=step_id, op=op, name=name))
    return True


def run_note(what: str, run: Any, *, step_id: str | None = None, **fields: Any) -> notes.Note:
    """A note about `run`, carrying its ids (the first event is the one that triggered it)."""
    event_ids = json.loads(run.event_ids)
    return notes.Note(
        what,
        run_id=run.id,
        function_id=run.function_id,
        event_id=event_ids[0] if event_ids else None,
        step_id=step_id,
        fields=fields,
    )


def mark_started(tx: Tx, run: Any, at: int) -> None:
    if changes := started_changes(tx, run, at):
        records.update_run(tx.conn, run.id, **changes)


def started_changes(tx: Tx, run: Any, at: int) -> dict[str, Any]:
    """What a call that began at `at` changes on its run (its first call starts the run)."""
    if run.started_at is None:
        tx.notes.append(run_note(notes.RUN_STARTED, run))
        return {"status": RunStatus.RUNNING, "started_at": at, "waiting": None}
    return {"waiting": None} if run.waiting is not None else {}


def first_event(tx: Tx, run_id: str) -> dict[str, Any]:
    """The event that triggered the run (the first of a batch); {} if it is gone."""
    run = records.get_run(tx.conn, run_id)
    ids = json.loads(run.event_ids)[:1] if run is not None else []
    found = records.load_event_payloads(tx.conn, ids)
    return found[0] if found else {}


def finish_run(
    tx: Tx,
    run_id: str,
    status: str,
    output: Any,
    *,
    keep_item: int | None = None,
    error: dict[str, Any] | None = None,
    run: Any = None,
    changes: dict[str, Any] | None = None,
    http_status: int = 0,
) -> bool:
    """End a run once: drop its queued work and waits; what the end sets off follows. A caller that
    has just read the run passes it (and any other column changes) to save a round trip;
    `http_status` is that of the app's answer that failed the run, if any."""
    run = run if run is not None else records.get_run(tx.conn, run_id)
    if run is None or run.status in ENDED:
        return False
    stored = error if status != RunStatus.COMPLETED else output
    ended = {
        "status": status,
        "ended_at": tx.now,
        "waiting": None,
        "output": json.dumps(stored, separators=(",", ":")),
    }
    records.update_run(tx.conn, run_id, **{**(changes or {}), **ended})
    q.remove_run_items(tx.conn, run_id, keep_item, tx.now)
    said = {"status": status, **error_fields(error)}
    tx.notes.append(run_note(notes.RUN_FINISHED, run, **said))
    records.delete_run_waits(tx.conn, run_id)
    # What the end sets off (a parent's invoke result, finished events, a released lock) is
    # applied by `finish_hooks.settle` once the transition's own work is done.
    tx.ended.append(Ended(run, status, output, error, http_status))
    return True


def cancel_run(tx: Tx, run_id: str, reason: str) -> bool:
    error = {"name": "RunCancelled", "message": reason}
    return finish_run(tx, run_id, RunStatus.CANCELLED, None, error=error)
