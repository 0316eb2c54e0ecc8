"""step.invoke: start another function's run and hand its result back to the caller."""

from typing import Any

from weir.platform.foundation.vocabulary import (
    HistoryKind,
    Opcode,
    QueueKind,
    StepStatus,
    SystemEvent,
    WaitKind,
)
from weir.platform.runtime.runs import enqueue_timer, resolve_step
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import steps as step_records
from weir.platform.store.records import waits as wait_records
from weir.platform.store.records.runs import Run
from weir.platform.store.records.waits import NewWait

DEFAULT_TIMEOUT_MS = 365 * 24 * 3600 * 1000
TIMEOUT_ERROR = {
    "name": "InngestInvokeTimeoutError",
    "message": "Timed out waiting for invoked function to complete",
    "error": "InngestInvokeTimeoutError: Timed out waiting for invoked function to complete",
}


def start_invoke(
    tx: Tx,
    run: Run,
    fn_slug: str,
    step_id: str,
    name: str,
    opts: dict[str, Any],
    timeout_ms: int | None,
) -> dict[str, Any]:
    """Open the wait for the invoked run's end; returns the data of the INVOKED event that
    starts it, for the caller to emit (admission, below, resolves the wait when it fails)."""
    correlation = f"{run.id}.{step_id}"
    expires = tx.now + (timeout_ms or DEFAULT_TIMEOUT_MS)
    wait_records.insert_wait(
        tx.conn,
        NewWait(
            kind=WaitKind.INVOKE,
            run_id=run.id,
            step_id=step_id,
            event_name=SystemEvent.FUNCTION_FINISHED,
            correlation_id=correlation,
            created_at=tx.now,
            expires_at=expires,
        ),
    )
    enqueue_timer(
        tx,
        QueueKind.INVOKE_TIMEOUT,
        expires,
        {"step_id": step_id},
        run_id=run.id,
        dedupe=_dedupe(correlation),
    )
    return _invoke_data(run, fn_slug, correlation, name, opts, expires)


def _invoke_data(
    run: Run, fn_slug: str, correlation: str, name: str, opts: dict[str, Any], expires: int
) -> dict[str, Any]:
    payload = opts.get("payload") or {}
    data = dict(payload.get("data") or {})
    data["_inngest"] = {
        "fn_id": opts.get("function_id", fn_slug),
        "correlation_id": correlation,
        "source_fn_id": run.function_id,
        "source_app_id": "",
        "expire": expires,
        "gid": "",
        "name": name,
    }
    return data


def _dedupe(correlation: str) -> str:
    return f"invoke:{correlation}"


def resolve_parent(tx: Tx, correlation: str, memo: dict[str, Any]) -> str | None:
    """Hand the invoked run's result to its parent; the parent's run id if it was waiting."""
    wait = wait_records.wait_by_correlation(tx.conn, correlation)
    if wait is None or not wait_records.delete_wait(tx.conn, wait.id):
        return None
    q.remove_by_dedupe(tx.conn, _dedupe(correlation))
    step_records.close_history(
        tx.conn,
        wait.run_id,
        HistoryKind.INVOKE,
        wait.step,
        StepStatus.FAILED if "error" in memo else StepStatus.COMPLETED,
        tx.now,
    )
    resolve_step(tx, wait.run_id, wait.step, memo, op=Opcode.INVOKE_FUNCTION)
    return wait.run_id


def fail_invoke(tx: Tx, payload: dict[str, Any], message: str) -> None:
    correlation = payload.get("data", {}).get("_inngest", {}).get("correlation_id")
    if correlation:
        resolve_parent(tx, str(correlation), {"error": {"name": "InvokeError", "message": message}})


def on_timeout(tx: Tx, run_id: str, step_id: str) -> None:
    resolve_parent(tx, f"{run_id}.{step_id}", {"error": dict(TIMEOUT_ERROR)})
