"""Applying what an app answered: the step result and whatever comes next, in one transaction."""

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from weir.platform.executor.request import attempts_allowed
from weir.platform.executor.response import (
    KNOWN_OPS,
    AttemptFailed,
    Checkpointed,
    Completed,
    Op,
    Ops,
    Outcome,
    Timing,
    parse_time,
)
from weir.platform.foundation.vocabulary import (
    HistoryKind,
    Opcode,
    QueueKind,
    RunStatus,
    StepStatus,
    SystemEvent,
)
from weir.platform.functions import parse_duration_ms
from weir.platform.gates import retry
from weir.platform.observability import notes
from weir.platform.observability.errors import error_fields
from weir.platform.reads.traces import HELD_KEY
from weir.platform.registry import Function
from weir.platform.runtime import events
from weir.platform.runtime.runs import (
    StepResult,
    enqueue_call,
    enqueue_timer,
    finish_run,
    mark_started,
    move_on,
    resolve_step,
    run_note,
    save_results,
    starts_at,
)
from weir.platform.runtime.steps import ai_infer as ai_steps
from weir.platform.runtime.steps import invoke, signals, waits
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records
from weir.platform.store.records import waits as wait_records
from weir.platform.store.records.runs import PendingStep, Run

MAX_STEPS = 1000
WAIT_DEFAULT_MS = 365 * 24 * 3600 * 1000
OPEN_OPS = (
    Opcode.STEP_PLANNED,
    Opcode.SLEEP,
    Opcode.WAIT_FOR_EVENT,
    Opcode.WAIT_FOR_SIGNAL,
    Opcode.INVOKE_FUNCTION,
    Opcode.AI_GATEWAY,
)


def apply(tx: Tx, item: q.Claimed, fn: Function, outcome: Outcome, timing: Timing) -> None:
    # Locked: a parallel step's answer applied at the same moment (another worker or process)
    # waits, then reads what this one saved; the run read here is handed down, never re-read.
    run = run_records.lock_run(tx.conn, item.run_id or "")
    if run is None or run.ended:
        _finish(tx, item)  # cancelled meanwhile: the result goes nowhere
        return
    _record_call(tx, item, outcome, timing, run.waiting)
    tx.notes.append(_call_note(run, item, outcome, timing))
    if isinstance(outcome, Completed):  # start and end in one write
        _finish(tx, item)
        started = starts_at(tx, run, item.claimed_at)
        finish_run(tx, run.id, RunStatus.COMPLETED, outcome.output, run=run, started_at=started)
        return
    # A run starts when its first call is claimed: the moment its throttle let it through.
    run = mark_started(tx, run, item.claimed_at)
    if isinstance(outcome, Ops):
        _apply_ops(tx, item, fn, run, outcome)
    elif isinstance(outcome, Checkpointed):
        _apply_checkpoint(tx, item, fn, run, outcome)
    else:
        _retry_or_fail(tx, item, fn, run.id, outcome, outcome.error)


def _apply_checkpoint(
    tx: Tx, item: q.Claimed, fn: Function, run: Run, outcome: Checkpointed
) -> None:
    """Steps run one after another in one request are kept whatever ended it: then the run
    ends, retries or fails, or goes on as the ops that followed say."""
    problem = _invalid(run, outcome.steps)
    if problem:
        _finish(tx, item)
        finish_run(tx, run.id, RunStatus.FAILED, None, error=problem)
        return
    results = [
        StepResult(o.id, {"data": o.data}, Opcode.STEP_RUN, o.display_name) for o in outcome.steps
    ]
    saved = save_results(tx, run, results) or run
    for o in outcome.steps:
        _maybe_reply(tx, run, o)
    then = outcome.then
    if isinstance(then, Ops):
        _apply_ops(tx, item, fn, saved, then)
    elif isinstance(then, AttemptFailed):
        _retry_or_fail(tx, item, fn, run.id, then, then.error)
    else:
        _finish(tx, item)
        if isinstance(then, Completed):
            finish_run(tx, run.id, RunStatus.COMPLETED, then.output, run=saved)
        elif saved is not run:
            move_on(tx, run, saved)


def _finish(tx: Tx, item: q.Claimed) -> None:
    """The call is done; its slots stay held when the caller passes them on
    (`NextCall.slots_kept`)."""
    keep = tx.next_call.keeps_slots(item)
    q.finish(tx.conn, item, tx.now, keep_slots=keep)
    if keep:
        tx.next_call.slots_kept = item


def _record_call(
    tx: Tx, item: q.Claimed, outcome: Outcome, timing: Timing, held: dict[str, Any] | None
) -> None:
    status, detail = _call_summary(outcome)
    if held and held.get("gate"):  # the gate that held the call until its claim: its trace
        # shows that wait by name (reads/traces.py); the row is written anyway
        detail[HELD_KEY] = {"gate": held["gate"], "key": held.get("key")}
    step_records.add_history(
        tx.conn,
        item.run_id or "",
        HistoryKind.CALL,
        status,
        timing.started,
        timing.ended,
        step_id=item.step_id,
        attempt=item.attempt,
        detail=detail,
    )


def _call_note(run: Run, item: q.Claimed, outcome: Outcome, timing: Timing) -> notes.Note:
    status = _call_summary(outcome)[0]
    duration = timing.ended - timing.started
    return run_note(
        notes.CALL_FINISHED,
        run,
        step_id=item.step_id,
        status=status,
        attempt=item.attempt,
        duration_ms=duration,
    )


def _call_summary(outcome: Outcome) -> tuple[StepStatus, dict[str, Any]]:
    if isinstance(outcome, Completed):
        return StepStatus.COMPLETED, {"result": "completed"}
    if isinstance(outcome, Ops):
        ops = [_op_summary(o) for o in outcome.ops]
        errored = any(o.op in (Opcode.STEP_ERROR, Opcode.STEP_FAILED) for o in outcome.ops)
        return (StepStatus.FAILED if errored else StepStatus.COMPLETED), {"ops": ops}
    if isinstance(outcome, Checkpointed):
        steps = [_op_summary(o) for o in outcome.steps]
        if outcome.then is None:
            return StepStatus.COMPLETED, {"ops": steps}
        status, detail = _call_summary(outcome.then)
        return status, {**detail, "ops": [*steps, *detail.get("ops", ())]}
    return StepStatus.FAILED, {"error": outcome.error, "status": outcome.status}


def _op_summary(op: Op) -> dict[str, Any]:
    """An op as the timeline keeps it; a failed step's error too, so every attempt's error
    (and stack) stays visible after the retry that follows replaces it."""
    summary: dict[str, Any] = {"op": op.op, "id": op.id, "name": op.display_name}
    if op.op in (Opcode.STEP_ERROR, Opcode.STEP_FAILED) and op.error:
        summary["error"] = op.error
    given = op.opts.get("input")
    if isinstance(given, list):  # the step's arguments, where the SDK sends them
        summary["input"] = given
    return summary


def _retry_or_fail(
    tx: Tx,
    item: q.Claimed,
    fn: Function,
    run_id: str,
    outcome: Ops | AttemptFailed,
    error: dict[str, Any],
) -> bool:
    """Retry the same request if the error allows and attempts remain; else fail the run."""
    if not outcome.no_retry and item.attempt + 1 < attempts_allowed(fn):
        at = _next_attempt(tx, item.attempt, outcome.retry_after_ms)
        q.retry(tx.conn, item, at, tx.now)
        _note_retry(tx, run_id, item, at, error)
        return True
    _finish(tx, item)
    http_status = outcome.status if isinstance(outcome, AttemptFailed) else 0
    # Weir's own verdicts (an op it cannot apply) are final too, but answered no status
    said_no_retry = outcome.no_retry and http_status != 0
    finish_run(
        tx,
        run_id,
        RunStatus.FAILED,
        None,
        error=error,
        http_status=http_status,
        no_retry=said_no_retry,
    )
    return False


def _next_attempt(tx: Tx, attempt: int, retry_after_ms: int | None) -> int:
    if retry_after_ms is not None or tx.retry_delay_ms is None:
        return retry.next_attempt_at(attempt, tx.now, tx.rng, retry_after_ms)
    return tx.now + tx.retry_delay_ms


def _note_retry(tx: Tx, run_id: str, item: q.Claimed, at: int, error: dict[str, Any]) -> None:
    when = datetime.fromtimestamp(at / 1000, UTC).isoformat(timespec="milliseconds")
    words = f"retrying after an error: attempt {item.attempt + 2} at {when}"
    tx.notes.append(
        notes.Note(
            notes.RETRY_SCHEDULED,
            run_id=run_id,
            function_id=item.function_id,
            step_id=item.step_id,
            fields={"attempt": item.attempt + 1, "at": at, **error_fields(error)},
        )
    )
    waiting = {
        "gate": "retry",
        "key": item.step_id,
        "until_ms": at,
        "words": words,
        "error": error.get("message", ""),
    }
    run_records.set_waiting(tx.conn, run_id, waiting)


def _apply_ops(tx: Tx, item: q.Claimed, fn: Function, run: Run, outcome: Ops) -> None:
    ops = sorted(
        outcome.ops, key=lambda o: o.op != Opcode.WAIT_FOR_EVENT
    )  # waits first, as Go does
    error_op = next((o for o in ops if o.op == Opcode.STEP_ERROR), None)
    if error_op is not None and _retry_or_fail_step(tx, item, fn, run, outcome, error_op):
        return
    problem = _invalid(run, ops)
    if problem:
        _finish(tx, item)
        finish_run(tx, run.id, RunStatus.FAILED, None, error=problem)
        return
    _finish_or_spare(tx, item, ops)
    # Open steps other than this call's own (its item ends here) are queued or in flight.
    planned_before = _open_ids(run) - {item.step_id}
    run = _open_pending(tx, run, ops)
    current: Run | None = run  # as stored, until an op changes it (then it is read again)
    for op in ops:
        if op.op == Opcode.STEP_PLANNED and op.id in planned_before:
            continue  # planned already and still unfinished (a race's later discovery)
        saves = _SAVES.get(op.op)
        if saves is not None:
            saves(tx, run, op, current)
        else:
            _apply_op(tx, fn, run, op)
        current = None
    if len(ops) > 1:
        tx.next_call.run = None  # a later op may have changed the run after the step's save
    going = tx.next_call
    if going.spare is not None:  # the run's next call did not take its row
        spare, going.spare = going.spare, None
        _finish(tx, spare)


def _finish_or_spare(tx: Tx, item: q.Claimed, ops: list[Op]) -> None:
    """Finish the call, unless its one op is a step's result and the call holds no slot: then
    its row is kept for the run's next call, made at once here (`runs.enqueue_call`). Only in
    this case is nothing else in the transaction looking at the run's queue items meanwhile:
    saving a result and moving the run on never ends it."""
    going = tx.next_call
    if len(ops) == 1 and ops[0].op in _SAVES and not item.keys and item.run_id == going.run_id:
        going.spare = item
    else:
        _finish(tx, item)


def _retry_or_fail_step(
    tx: Tx, item: q.Claimed, fn: Function, run: Run, outcome: Ops, op: Op
) -> bool:
    """A StepError retries the same request; True if it did (nothing else to apply)."""
    if not outcome.no_retry and item.attempt + 1 < attempts_allowed(fn):
        return _retry_or_fail(tx, item, fn, run.id, outcome, op.error or {})
    return False


def _invalid(run: Run, ops: list[Op]) -> dict[str, Any] | None:
    unknown = [o.op for o in ops if o.op not in KNOWN_OPS]
    if unknown:
        return {
            "name": "UnknownOpcode",
            "message": f"the SDK sent unknown ops {unknown}; Weir handles {sorted(KNOWN_OPS)}",
        }
    if run.step_count + len(ops) > MAX_STEPS:
        return {
            "name": "StepLimitExceeded",
            "message": f"the run reached {MAX_STEPS} steps, the most a run may have",
        }
    return None


def _open_ids(run: Run) -> set[str]:
    """Steps the run has opened and not yet resolved: their work is queued or in flight."""
    return {p.id for p in run.pending}


def _open_pending(tx: Tx, run: Run, ops: list[Op]) -> Run:
    """Ops that finish later are tracked so discovery waits for the whole parallel group.
    Returns the run as it now stands."""
    current = run.pending
    known = {p.id for p in current}
    fresh = [
        PendingStep(o.id, race=(o.opts or {}).get("parallelMode") == "race")
        for o in ops
        if o.op in OPEN_OPS and o.id not in known
    ]
    parallel = len(ops) > 1 or bool(current)
    if fresh or parallel != run.force_plan:
        pending, force_plan = (*current, *fresh), parallel or run.force_plan
        run_records.set_pending(tx.conn, run.id, pending, force_plan)
        return replace(run, pending=pending, force_plan=force_plan)
    return run


def _apply_op(tx: Tx, fn: Function, run: Run, op: Op) -> None:
    handler = _HANDLERS.get(op.op)
    if handler is not None:
        handler(tx, fn, run, op)


def _step_run(tx: Tx, run: Run, op: Op, current: Run | None) -> None:
    memo = {"data": op.data}
    resolve_step(tx, run.id, op.id, memo, op=Opcode.STEP_RUN, name=op.display_name, current=current)
    _maybe_reply(tx, run, op)


def _maybe_reply(tx: Tx, run: Run, op: Op) -> None:
    """A step.reply (weir.sdk): its result answers the signal delivery it names."""
    delivery = op.opts.get("reply") if op.opts else None
    if isinstance(delivery, str):
        signals.reply(tx, run.id, delivery, op.data)


def _step_failed(tx: Tx, run: Run, op: Op, current: Run | None) -> None:
    error = op.error or {}
    memo = {
        "error": {
            "name": str(error.get("name") or "Error"),
            "message": str(error.get("message") or ""),
            **({"stack": error["stack"]} if isinstance(error.get("stack"), str) else {}),
        }
    }
    resolve_step(
        tx, run.id, op.id, memo, op=Opcode.STEP_FAILED, name=op.display_name, current=current
    )


def _planned(tx: Tx, fn: Function, run: Run, op: Op) -> None:
    enqueue_call(
        tx,
        run.id,
        fn.id,
        run.lane,
        run.limits,
        tx.now,
        run.score,
        step_id=op.id,
        dedupe=f"plan:{run.id}:{op.id}",
    )


def _sleep(tx: Tx, fn: Function, run: Run, op: Op) -> None:
    wake = parse_time(op.name) or _from_duration(tx, op)
    at = max(wake, tx.now)
    dedupe = f"sleep:{run.id}:{op.id}"  # a replayed Sleep keeps the first wake time
    if enqueue_timer(
        tx,
        QueueKind.SLEEP,
        at,
        {"step_id": op.id, "name": op.display_name},
        run_id=run.id,
        dedupe=dedupe,
    ):
        _open_span(tx, run, HistoryKind.SLEEP, op, {"until": at})


def _open_span(tx: Tx, run: Run, kind: HistoryKind, op: Op, detail: dict[str, Any]) -> None:
    """A timeline entry for an op that ends later (its sleep, wait or invoke closes it)."""
    step_records.add_history(
        tx.conn,
        run.id,
        kind,
        StepStatus.RUNNING,
        tx.now,
        None,
        step_id=op.id,
        name=op.display_name,
        detail=detail,
    )


def _from_duration(tx: Tx, op: Op) -> int:
    duration = (op.opts or {}).get("duration")
    return tx.now + (parse_duration_ms(duration) if isinstance(duration, str) else 0)


def _wait(tx: Tx, fn: Function, run: Run, op: Op) -> None:
    if wait_records.get_wait(tx.conn, run.id, op.id) is not None:
        return
    opts = op.opts or {}
    timeout = opts.get("timeout")
    timeout_ms = parse_duration_ms(timeout) if isinstance(timeout, str) else WAIT_DEFAULT_MS
    expr: str | None = opts["if"] if isinstance(opts.get("if"), str) else None
    event: str = opts["event"] if isinstance(opts.get("event"), str) else op.name
    waits.open_wait(tx, run, op.id, op.display_name, event, expr, timeout_ms)
    _open_span(
        tx, run, HistoryKind.WAIT, op, {"event": event, "if": expr, "until": tx.now + timeout_ms}
    )


def _wait_signal(tx: Tx, fn: Function, run: Run, op: Op) -> None:
    opts = op.opts or {}
    timeout = opts.get("timeout")
    asked = signals.SignalWait(
        signal=str(opts.get("signal")),
        expression=opts["if"] if isinstance(opts.get("if"), str) else None,
        timeout_ms=parse_duration_ms(timeout) if isinstance(timeout, str) else WAIT_DEFAULT_MS,
        replace=opts.get("conflict") == "replace",
    )
    signals.open_signal_wait(tx, run, op.id, op.display_name, asked)


def _invoke(tx: Tx, fn: Function, run: Run, op: Op) -> None:
    if wait_records.get_wait(tx.conn, run.id, op.id) is not None:
        return
    opts = op.opts or {}
    timeout = opts.get("timeout")
    timeout_ms = parse_duration_ms(timeout) if isinstance(timeout, str) else None
    target = str(opts.get("function_id", ""))
    _open_span(tx, run, HistoryKind.INVOKE, op, {"function": target})
    data = invoke.start_invoke(tx, run, target, op.id, op.display_name, opts, timeout_ms)
    events.emit(tx, SystemEvent.FUNCTION_INVOKED, data)


# Ops that save a step's result: given the run as it stands when the caller holds it.
_SAVES: dict[str, Callable[[Tx, Run, Op, Run | None], None]] = {
    Opcode.STEP_RUN: _step_run,
    Opcode.STEP: _step_run,
    Opcode.STEP_ERROR: _step_failed,  # reached only when no retry remains
    Opcode.STEP_FAILED: _step_failed,
}
_HANDLERS: dict[str, Callable[[Tx, Function, Run, Op], None]] = {
    Opcode.STEP_PLANNED: _planned,
    Opcode.SLEEP: _sleep,
    Opcode.WAIT_FOR_EVENT: _wait,
    Opcode.WAIT_FOR_SIGNAL: _wait_signal,
    Opcode.INVOKE_FUNCTION: _invoke,
    Opcode.AI_GATEWAY: ai_steps.open_call,
}
