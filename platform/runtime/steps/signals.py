"""Signals: step.wait_for_signal pauses, their delivery by POST /v1/signals to the one run
waiting on the name, their timeouts (`waits.on_timeout`), and the run's answer to the sender
(docs/protocol.md, Signals)."""

from typing import Any

from weir.platform.foundation.ids import new_id
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import (
    HistoryKind,
    Opcode,
    QueueKind,
    StepStatus,
    WaitKind,
)
from weir.platform.runtime.keys import expression_holds
from weir.platform.runtime.runs import enqueue_timer, first_event, resolve_step
from weir.platform.runtime.steps.waits import timer_dedupe
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import signals as signal_records
from weir.platform.store.records import steps as step_records
from weir.platform.store.records import waits as wait_records
from weir.platform.store.records.runs import Run
from weir.platform.store.records.signals import Delivery
from weir.platform.store.records.waits import NewWait, Wait

CONFLICT_ERROR = "SignalConflictError"  # the step of a second waiter fails with it


@record(slots=True)
class SignalWait:
    """What a WaitForSignal op asks (its opts, checked by executor.opchecks)."""

    signal: str
    expression: str | None  # the `if` a signal's data must meet to be delivered
    timeout_ms: int
    replace: bool  # opts.conflict "replace": take the name from the run holding it


@record(slots=True)
class Delivered:
    run_id: str
    delivery_id: str


@record(slots=True)
class Rejected:
    run_id: str
    expression: str


def open_signal_wait(tx: Tx, run: Run, step_id: str, name: str, asked: SignalWait) -> None:
    held = signal_records.signal_wait(tx.conn, asked.signal)
    if held is not None and (held.run_id, held.step_id) == (run.id, step_id):
        return  # the op again (a replayed answer): the wait stands
    if held is not None and not asked.replace:
        error = {
            "name": CONFLICT_ERROR,
            "message": f"signal {asked.signal!r} is already waited on by run {held.run_id} "
            "(a signal name is held by one waiting run; opts.conflict 'replace' takes it over)",
        }
        resolve_step(tx, run.id, step_id, {"error": error}, op=Opcode.WAIT_FOR_SIGNAL, name=name)
        return
    if held is not None:
        _release(tx, held)
    # Unique (ux_waits_signal): a run inserting the same name at the same moment in another
    # process loses the race, and its job runs again from the top, then finds this wait.
    expires = tx.now + asked.timeout_ms
    new = NewWait(
        kind=WaitKind.SIGNAL,
        run_id=run.id,
        step_id=step_id,
        event_name=asked.signal,
        expression=asked.expression,
        created_at=tx.now,
        expires_at=expires,
    )
    wait_records.insert_wait(tx.conn, new)
    payload = {"step_id": step_id, "name": name}
    dedupe = timer_dedupe(run.id, step_id)
    enqueue_timer(tx, QueueKind.WAIT_TIMEOUT, expires, payload, run_id=run.id, dedupe=dedupe)
    detail = {"signal": asked.signal, "if": asked.expression, "until": expires}
    step_records.add_history(
        tx.conn,
        run.id,
        HistoryKind.WAIT,
        StepStatus.RUNNING,
        tx.now,
        None,
        step_id=step_id,
        name=name,
        detail=detail,
    )


def _release(tx: Tx, held: Wait) -> None:
    """The run replaced as the signal's waiter resumes with None, as at its timeout."""
    if wait_records.delete_wait(tx.conn, held.id):
        q.remove_by_dedupe(tx.conn, timer_dedupe(held.run_id, held.step))
        step_records.close_history(
            tx.conn, held.run_id, HistoryKind.WAIT, held.step, StepStatus.TIMED_OUT, tx.now
        )
        resolve_step(tx, held.run_id, held.step, None, op=Opcode.WAIT_FOR_SIGNAL)


def deliver(tx: Tx, signal: str, data: Any) -> Delivered | Rejected | None:
    """Resume the run waiting on `signal` with `data`. Two deliveries at once: the wait's
    delete lets one through (the other finds it gone, or loses the race and runs again)."""
    wait = signal_records.signal_wait(tx.conn, signal)
    if wait is None:
        return None
    received = {"signal": signal, "data": data}
    if wait.expression:
        activation = {"event": first_event(tx, wait.run_id), "async": received}
        if not expression_holds(wait.expression, activation):
            return Rejected(wait.run_id, wait.expression)
    if not wait_records.delete_wait(tx.conn, wait.id):
        return None
    q.remove_by_dedupe(tx.conn, timer_dedupe(wait.run_id, wait.step))
    step_records.close_history(
        tx.conn, wait.run_id, HistoryKind.WAIT, wait.step, StepStatus.COMPLETED, tx.now
    )
    delivery_id = new_id(tx.now)
    memo = {"data": {**received, "delivery_id": delivery_id}}
    if not resolve_step(tx, wait.run_id, wait.step, memo, op=Opcode.WAIT_FOR_SIGNAL):
        return None  # the run ended meanwhile (its waits go with it)
    delivery = Delivery(delivery_id, signal, wait.run_id, wait.step, tx.now, False, None, None)
    signal_records.record_delivery(tx.conn, delivery)
    return Delivered(wait.run_id, delivery_id)


def reply(tx: Tx, run_id: str, delivery_id: str, data: Any) -> None:
    """A step.reply's result answers the delivery it names (its own run's, the first only)."""
    signal_records.record_answer(tx.conn, delivery_id, run_id, data, tx.now)
