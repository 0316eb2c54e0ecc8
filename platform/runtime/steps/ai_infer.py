"""step.ai.infer (the `AIGateway` op): a step Weir carries out itself, docs/protocol.md §8.1.

The op opens the step (a timeline span, the run waits for it like for a sleep) and queues an
`ai` item. The service makes the HTTP request outside any transaction and hands the result
here: success saves `{"data": <response JSON>}` and calls the function again; a failed
request is retried with the function's retries and backoff, and when none remain (or when
retrying cannot help) `{"error": ...}` is saved, which the SDK raises in the function.
"""

from typing import Any

from weir.platform.executor import answer_limits
from weir.platform.executor.ai_infer import AIResult
from weir.platform.executor.ai_options import shown_url
from weir.platform.executor.request import attempts_allowed
from weir.platform.executor.response import Op
from weir.platform.foundation.vocabulary import HistoryKind, Opcode, QueueKind, StepStatus
from weir.platform.gates import retry
from weir.platform.observability import notes
from weir.platform.observability.errors import error_fields
from weir.platform.registry import Function
from weir.platform.runtime.runs import enqueue_timer, resolve_step
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records
from weir.platform.store.records.runs import Run

KIND = QueueKind.AI
SPAN = HistoryKind.AI


def open_call(tx: Tx, fn: Function, run: Run, op: Op) -> None:
    """Queue the request once per step (a replayed op finds it queued or done)."""
    opts = _with_rerun_body(run, op)
    payload = {"step_id": op.id, "name": op.display_name, "opts": opts}
    dedupe = f"ai:{run.id}:{op.id}"
    if enqueue_timer(tx, KIND, tx.now, payload, run_id=run.id, function_id=fn.id, dedupe=dedupe):
        url = shown_url(str(op.opts.get("url", "")))
        step_records.add_history(
            tx.conn,
            run.id,
            SPAN,
            StepStatus.RUNNING,
            tx.now,
            None,
            step_id=op.id,
            name=op.display_name,
            # the body as the step's input: what a rerun from this step may replace
            detail={"url": url, "format": op.opts.get("format"), "input": [opts.get("body")]},
        )


def _with_rerun_body(run: Run, op: Op) -> dict[str, Any]:
    """The op's options, with the body a rerun from this step gave it instead of the app's."""
    given = run.keys.get(run_records.RERUN_INPUT_KEY)
    if isinstance(given, dict) and given.get("via") == "ai" and given.get("step") == op.id:
        return {**op.opts, "body": given["input"][0]}
    return op.opts


def apply_result(tx: Tx, item: q.Claimed, fn: Function | None, result: AIResult) -> None:
    run = run_records.get_run(tx.conn, item.run_id or "")
    if run is None or run.ended:
        q.finish(tx.conn, item, tx.now)
        return
    error = result.error
    retry_it = result.retry
    if error is None:
        memo = {"data": result.data}
        too_large = answer_limits.state_problem(run.state_bytes + answer_limits.saved_size(memo))
        if too_large is None:
            _save(tx, item, StepStatus.COMPLETED, memo)
            return
        # The answer fits a step but not the run's state: asking again gets the same size.
        error, retry_it = too_large.error, False
    allowed = attempts_allowed(fn) if fn is not None else 1
    if retry_it and item.attempt + 1 < allowed:
        _retry(tx, item, error)
        return
    _save(tx, item, StepStatus.FAILED, {"error": {k: error[k] for k in ("name", "message")}})


def _save(tx: Tx, item: q.Claimed, status: StepStatus, memo: dict[str, Any]) -> None:
    run_id, step_id = item.run_id or "", str(item.payload["step_id"])
    q.finish(tx.conn, item, tx.now)
    step_records.close_history(tx.conn, run_id, SPAN, step_id, status, tx.now)
    name = str(item.payload.get("name", ""))
    resolve_step(tx, run_id, step_id, memo, op=Opcode.AI_GATEWAY, name=name)


def _retry(tx: Tx, item: q.Claimed, error: dict[str, Any]) -> None:
    at = _next_attempt(tx, item.attempt)
    q.retry(tx.conn, item, at, tx.now)
    tx.notes.append(
        notes.Note(
            notes.RETRY_SCHEDULED,
            run_id=item.run_id,
            function_id=item.function_id,
            step_id=str(item.payload["step_id"]),
            fields={"attempt": item.attempt + 1, "at": at, **error_fields(error)},
        )
    )


def _next_attempt(tx: Tx, attempt: int) -> int:
    if tx.retry_delay_ms is None:
        return retry.next_attempt_at(attempt, tx.now, tx.rng)
    return tx.now + tx.retry_delay_ms
