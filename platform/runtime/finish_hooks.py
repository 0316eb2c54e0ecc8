"""What a run's end sets off, composed in this one place: its parent's invoke result, the
locks it held, and Weir's finished events.

`runs.finish_run` only ends the run and notes it on the transaction; `settle` applies the
consequences once the transition's own work is done. They may end more runs (a finished event
admits a singleton run that cancels another), so it goes on until none is left.
"""

from typing import Any

from weir.platform.executor.driver import parsed_events
from weir.platform.foundation.vocabulary import EventOutcome, RunStatus, SystemEvent
from weir.platform.runtime import events, flow
from weir.platform.runtime.runs import NO_FOLLOW_UP, note_effect
from weir.platform.runtime.steps.invoke import resolve_parent
from weir.platform.runtime.tx import Ended, Tx
from weir.platform.store.records import events as event_records
from weir.platform.store.records.runs import Run


def settle(tx: Tx) -> None:
    """Apply the consequences of every run ended in this transaction, in the order they ended."""
    while tx.ended:
        ended = tx.ended.pop(0)
        after_finish(tx, ended)


def after_finish(tx: Tx, ended: Ended) -> None:
    run, status, output, error = ended.run, ended.status, ended.output, ended.error
    parent = None
    if run.correlation_id:
        memo = {"data": output} if status == RunStatus.COMPLETED else {"error": error or {}}
        parent = resolve_parent(tx, run.correlation_id, memo)
    flow.after_finish(tx, run)
    trigger_events = _trigger_events(tx, run)
    if trigger_events and trigger_events[0].get("name") in NO_FOLLOW_UP:
        return
    if status == RunStatus.FAILED:
        error = standard_error(error or {}, ended.http_status, no_retry=ended.no_retry)
    finished = _emit_finished(tx, run, status, output, error, trigger_events)
    if parent is not None:  # the finished event is what the invoking parent waited for
        words = f"handed run {run.id}'s result to the run that invoked it"
        note_effect(tx, finished, parent, EventOutcome.RESUMED, words)


def _trigger_events(tx: Tx, run: Run) -> list[dict[str, Any]]:
    """The run's trigger events: as this transaction or the executor holds them, else read."""
    held = tx.trigger_events.get(run.id) or tx.known_events.get(run.id)
    # A large event is held as a Document (a dict subclass that parses its bytes only when
    # read): serialized as it stands, it would lose its data. Read those from the store.
    parsed = parsed_events(held)
    if parsed is not None and len(parsed) == len(run.event_ids):
        return parsed
    return event_records.load_event_payloads(tx.conn, list(run.event_ids))


def standard_error(
    error: dict[str, Any], http_status: int, *, no_retry: bool = False
) -> dict[str, Any]:
    """A failed run's error as the finished and failed events carry it: Inngest's
    StandardError, whose `error` is "NonRetriableError" when the failing answer said not to
    retry, else names that answer's HTTP status (or, for a failure without one, repeats the
    message), with the SDK's name, message and stack only."""
    message = str(error.get("message") or "")
    said = f"invalid status code: {http_status}" if http_status else message
    shaped = {
        "error": "NonRetriableError" if no_retry else said,
        "name": str(error.get("name") or "Error"),
        "message": message,
    }
    stack = error.get("stack")
    if isinstance(stack, str) and stack:  # Go omits an empty stack
        shaped["stack"] = stack
    return shaped


def _emit_finished(
    tx: Tx,
    run: Run,
    status: str,
    output: Any,
    error: dict[str, Any] | None,
    trigger_events: list[dict[str, Any]],
) -> str:
    """Emit the finished event (and the failed or cancelled one); the finished event's id."""
    data: dict[str, Any] = {
        "function_id": tx.registry.slug_of(run.function_id),
        "run_id": run.id,
        "event": trigger_events[0] if trigger_events else {},
        "events": trigger_events,
        "_inngest": {"status": status},
    }
    if run.correlation_id:
        data["correlation_id"] = run.correlation_id
    if status == RunStatus.COMPLETED:
        data["result"] = output
    else:
        data["error"] = error
    finished = events.emit(tx, SystemEvent.FUNCTION_FINISHED, data)
    follow = {
        RunStatus.FAILED: SystemEvent.FUNCTION_FAILED,
        RunStatus.CANCELLED: SystemEvent.FUNCTION_CANCELLED,
    }.get(RunStatus(status))
    if follow:
        events.emit(tx, follow, data, user_id=run.id)  # id = run id: one on_failure run per run
    return finished
