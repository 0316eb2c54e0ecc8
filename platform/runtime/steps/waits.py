"""Waits: step.wait_for_event pauses and their timeouts, matched against every new event."""

from typing import Any

from weir.platform.foundation.vocabulary import (
    EventOutcome,
    HistoryKind,
    Opcode,
    QueueKind,
    StepStatus,
    WaitKind,
)
from weir.platform.runtime.cancellation import try_cancel
from weir.platform.runtime.keys import expression_holds
from weir.platform.runtime.runs import enqueue_timer, first_event, note_effect, resolve_step
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import steps as step_records
from weir.platform.store.records import waits as wait_records
from weir.platform.store.records.runs import Run
from weir.platform.store.records.waits import NewWait, Wait


def open_wait(
    tx: Tx, run: Run, step_id: str, name: str, event: str, expression: str | None, timeout_ms: int
) -> None:
    expires = tx.now + timeout_ms
    wait_records.insert_wait(
        tx.conn,
        NewWait(
            kind=WaitKind.WAIT,
            run_id=run.id,
            step_id=step_id,
            event_name=event,
            expression=expression,
            created_at=tx.now,
            expires_at=expires,
        ),
    )
    enqueue_timer(
        tx,
        QueueKind.WAIT_TIMEOUT,
        expires,
        {"step_id": step_id, "name": name},
        run_id=run.id,
        dedupe=timer_dedupe(run.id, step_id),
    )


def timer_dedupe(run_id: str, step_id: str) -> str:
    return f"wait:{run_id}:{step_id}"


def match_event(tx: Tx, event_id: str, payload: dict[str, Any], found: list[Wait]) -> None:
    """Resume or cancel what the event satisfies, of `found`: the waits on its name opened
    before it arrived (`wait_records.waits_for_event`). Read once for all the events of one
    name accepted together: those arrived at one time, and a wait taken by one of them is
    deleted, which the next finds (`delete_wait`, `cancel_run`). A wait found gone leaves
    `found` too, so the next event of the batch does not evaluate it again: the wait taken, and
    every wait of a run cancelled (ended, its waits deleted with it)."""
    taken: set[int] = set()  # waits gone
    ended: set[str] = set()  # runs ended, their waits gone with them
    for wait in found:
        if wait.run_id in ended:
            continue
        if wait.kind == WaitKind.WAIT and _try_resume(tx, wait, event_id, payload):
            taken.add(wait.id)
        elif wait.kind == WaitKind.CANCEL and try_cancel(tx, wait, event_id, payload):
            ended.add(wait.run_id)
    if taken or ended:
        found[:] = [w for w in found if w.id not in taken and w.run_id not in ended]


def _try_resume(tx: Tx, wait: Wait, event_id: str, payload: dict[str, Any]) -> bool:
    """Whether the wait is gone now: this event took it, or another had already."""
    trigger = first_event(tx, wait.run_id)
    if not expression_holds(wait.expression, {"event": trigger, "async": payload}):
        return False
    if not wait_records.delete_wait(tx.conn, wait.id):
        return True
    q.remove_by_dedupe(tx.conn, timer_dedupe(wait.run_id, wait.step))
    step_records.close_history(
        tx.conn, wait.run_id, HistoryKind.WAIT, wait.step, StepStatus.COMPLETED, tx.now
    )
    if resolve_step(tx, wait.run_id, wait.step, payload, op=Opcode.WAIT_FOR_EVENT):
        note_effect(tx, event_id, wait.run_id, EventOutcome.RESUMED, "resumed a wait for it")
    return True


def on_timeout(tx: Tx, run_id: str, step_id: str) -> None:
    wait = wait_records.get_wait(tx.conn, run_id, step_id)
    if wait is not None and wait_records.delete_wait(tx.conn, wait.id):
        step_records.close_history(
            tx.conn, run_id, HistoryKind.WAIT, step_id, StepStatus.TIMED_OUT, tx.now
        )
        op = Opcode.WAIT_FOR_SIGNAL if wait.kind == WaitKind.SIGNAL else Opcode.WAIT_FOR_EVENT
        resolve_step(tx, run_id, step_id, None, op=op)
