"""Cancel-on subscriptions: an incoming event that matches cancels the run between steps."""

from typing import Any

from weir.platform.foundation.ids import id_time_ms
from weir.platform.foundation.vocabulary import EventOutcome, WaitKind
from weir.platform.gates import cancel_on
from weir.platform.runtime.keys import expression_holds
from weir.platform.runtime.runs import cancel_run, first_event
from weir.platform.runtime.tx import Tx
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import waits as wait_records
from weir.platform.store.records.runs import Run
from weir.platform.store.records.waits import NewWait, Wait


def subscribe(tx: Tx, run_id: str, event: str, expression: str | None, expires_at: int) -> None:
    wait_records.insert_wait(
        tx.conn,
        NewWait(
            kind=WaitKind.CANCEL,
            run_id=run_id,
            step_id=None,
            event_name=event,
            expression=expression,
            created_at=tx.now,
            expires_at=expires_at,
        ),
    )


def try_cancel(tx: Tx, wait: Wait, event_id: str, payload: dict[str, Any]) -> bool:
    """Whether the wait's run has ended now (this event cancelled it, or it ended before):
    its waits are gone."""
    run = run_records.get_run(tx.conn, wait.run_id)
    if run is None or run.ended:
        return True
    if not cancel_on.may_cancel(_window(wait, run), _candidate(event_id)):
        return False
    activation = {"event": first_event(tx, run.id), "async": payload}
    if not expression_holds(wait.expression, activation):
        return False
    if cancel_run(tx, run.id, f"cancelled by event {payload['name']!r} ({event_id})"):
        effect, words = EventOutcome.CANCELLED_RUN, "cancelled the run (cancel-on)"
        event_records.record_outcome(
            tx.conn, event_id, run.function_id, effect, run.id, words, tx.now
        )
    return True


def _window(wait: Wait, run: Run) -> cancel_on.CancelWindow:
    triggers = run.event_ids
    return cancel_on.CancelWindow(run.id, triggers, run.created_at, wait.expires_at)


def _candidate(event_id: str) -> cancel_on.CandidateEvent:
    return cancel_on.CandidateEvent(event_id, id_time_ms(event_id))  # ids carry receive time
