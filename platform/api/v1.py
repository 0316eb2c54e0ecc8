"""The read API for tools and tests, shaped like Inngest's v1 REST API."""

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import run_reads
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.foundation import jsonvalues
from weir.platform.foundation.vocabulary import HistoryKind, RunStatus, StepStatus
from weir.platform.reads import events, runs, traces
from weir.platform.reads.records import HistoryEntry, Outcome, Run, Step, StoredEvent
from weir.platform.reads.run_state import CallInFlight, RunState
from weir.platform.reads.runs import RunLinks
from weir.platform.runtime.rerun import RerunError, RerunInputError, step_input
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter(prefix="/v1")
V1_STATUS = {
    RunStatus.QUEUED: "Queued",
    RunStatus.RUNNING: "Running",
    RunStatus.COMPLETED: "Completed",
    RunStatus.FAILED: "Failed",
    RunStatus.CANCELLED: "Cancelled",
    RunStatus.SKIPPED: "Skipped",
}


def _ok(weir: Platform, data: Any) -> JSONResponse:
    return JSONResponse({"data": data, "metadata": {"fetched_at": weir.clock.now_ms()}})


def _missing(what: str, ident: str) -> JSONResponse:
    return JSONResponse({"error": f"no {what} with id {ident!r}"}, 404)


@router.get("/events/{event_id}", responses=docs.errors(401, 404))
async def get_event(event_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    found = await weir.read(lambda c: events.event_detail(c, event_id))
    if found is None:
        return _missing("event", event_id)
    outcomes = [outcome_json(weir, o) for o in found.outcomes]
    return _ok(weir, event_json(found.event) | {"outcomes": outcomes})


@router.get("/events/{event_id}/runs", responses=docs.errors(401))
async def event_runs(event_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    now, most = weir.clock.now_ms(), runs.max_attempts_of(weir.registry.by_id)
    rows, states = await weir.read(lambda c: events.event_runs_with_states(c, event_id, now, most))
    return _ok(weir, [run_json(weir, row, states[row.id]) for row in rows])


@router.get("/runs/{run_id}", responses=docs.errors(401, 404))
async def get_run(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    view = await run_reads.run_view(weir, run_id)
    if view is None:
        return _missing("run", run_id)
    data = run_json(weir, view.run, view.state) | {
        "steps": [step_json(s, view.step_status.get(s.step_id)) for s in view.steps],
        "history": [history_json(h) for h in view.history]
        + [in_flight_json(c) for c in view.in_flight],
        "links": links_json(view.links),
    }
    return _ok(weir, data)


@router.get("/runs/{run_id}/trace", responses=docs.errors(401, 404))
async def get_run_trace(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    """The run as a trace: its spans, parents first (docs/operations.md, Traces)."""
    found = await run_reads.run_trace(weir, run_id)
    if found is None:
        return _missing("run", run_id)
    return _ok(weir, traces.trace_json(found))


@router.delete("/runs/{run_id}", responses=docs.errors(401, 404))
async def cancel_run(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    run = await weir.read(lambda c: runs.run(c, run_id))
    if run is None:
        return _missing("run", run_id)
    cancelled = await weir.cancel(run_id)
    return _ok(weir, {"run_id": run_id, "cancelled": cancelled})


RERUN = {
    "type": "object",
    "properties": {
        "from_step": {
            "type": "string",
            "description": "a step id or name: the steps completed before it are kept",
        },
        "input": {
            "type": "array",
            "description": "with from_step: that step's new input (a step.run's arguments, "
            "where its SDK sends them; for step.ai.infer, one item: the request body)",
        },
    },
}
MAX_RERUN_BYTES = 1024 * 1024  # a step's new input included


@router.post(
    "/runs/{run_id}/rerun",
    openapi_extra={"requestBody": {"required": False, "content": {docs.JSON: {"schema": RERUN}}}},
    responses=docs.errors(400, 401, 404, 409),
)
async def rerun_run(
    run_id: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """Start a new run of the run's function from the same event(s), past the pre-run gates
    (runtime/rerun.py); answers the new run's id. With `from_step`, the memoized results of
    the steps completed before that step are kept, and the new run goes on from there."""
    run = await weir.read(lambda c: runs.run(c, run_id))
    if run is None:
        return _missing("run", run_id)
    asked, problem = await _rerun_body(request)
    if problem:
        return JSONResponse({"error": problem}, 400)
    from_step, step_input = asked
    try:
        new_run_id = await weir.rerun(run_id, from_step, step_input)
    except RerunError as exc:  # the function or the events it needs are gone, no such step
        return JSONResponse({"error": f"run {run_id!r} cannot be rerun: {exc}"}, 409)
    return _ok(weir, {"run_id": new_run_id, "original_run_id": run_id, "from_step": from_step})


RerunAsked = tuple[str | None, list[Any] | None]
RERUN_SHAPE = '{"from_step": "<step id or name>", "input": [...]} (input optional)'


async def _rerun_body(request: Request) -> tuple[RerunAsked, str]:
    """The optional body's `from_step` and `input`, or a problem."""
    try:
        raw = await read_capped(request, MAX_RERUN_BYTES, "rerun request")
    except BodyTooLarge as exc:
        return (None, None), str(exc)
    if not raw.strip():
        return (None, None), ""
    try:
        body = jsonvalues.loads(raw)
    except ValueError:
        return (None, None), f"the body is not JSON; send {RERUN_SHAPE} or nothing"
    if not isinstance(body, dict) or set(body) - {"from_step", "input"}:
        return (None, None), f"the body must be {RERUN_SHAPE} (or empty)"
    step, given = body.get("from_step"), body.get("input")
    if step is not None and (not isinstance(step, str) or not step.strip()):
        return (None, None), "from_step must be a non-empty string: a step's id or name"
    if given is None:
        return (step, None), ""
    if step is None and isinstance(given, list):
        return (None, None), "input replaces a step's input: name the step in from_step"
    try:
        return (step, step_input(given, "input")), ""
    except RerunInputError as exc:
        return (None, None), str(exc)


def event_json(row: StoredEvent) -> dict[str, Any]:
    payload = row.payload
    return {
        "internal_id": row.id,
        "id": payload.get("id"),
        "name": row.name,
        "data": payload.get("data"),
        "user": payload.get("user", {}),
        "ts": row.ts,
        "v": payload.get("v"),
        "received_at": row.received_at,
    }


def outcome_json(weir: Platform, row: Outcome) -> dict[str, Any]:
    """Why an event started no run of its own for a function (skipped, merged, duplicate)."""
    return {
        "function_id": weir.function_slug(row.function_id),
        "outcome": row.outcome,
        "run_id": row.run_id,
        "detail": row.detail,
        "at": row.at,
    }


def run_json(weir: Platform, run: Run, state: RunState) -> dict[str, Any]:
    """A run; `state` says what it does or waits for, and `waiting` repeats it while it waits
    (null while a call executes and once it ended)."""
    return {
        "run_id": run.id,
        "function_id": weir.function_slug(run.function_id),
        "status": V1_STATUS.get(run.status, run.status),
        "queued_at": run.created_at,
        "run_started_at": run.started_at,
        "ended_at": run.ended_at,
        "output": run.output,
        "event_id": run.trigger_id,
        "event_ids": list(run.event_ids),
        "batch_id": run.batch_id,
        "cron": run.cron,
        "original_run_id": run.original_run_id,
        "state": state.to_json(),
        "waiting": state.to_json() if state.waiting else None,
        "warnings": list(run.warnings),
    }


def step_json(row: Step, status: StepStatus | None) -> dict[str, Any]:
    return {
        "id": row.step_id,
        "name": row.name,
        "op": row.op,
        "status": status,
        "seq": row.seq,
        "result": row.memo,
        "at": row.at,
    }


def history_json(row: HistoryEntry) -> dict[str, Any]:
    return {
        "kind": row.kind,
        "step_id": row.step_id,
        "name": row.name,
        "attempt": row.attempt,
        "status": row.status,
        "started_at": row.started_at,
        "ended_at": row.ended_at,
        "detail": row.detail.data,
    }


def in_flight_json(call: CallInFlight) -> dict[str, Any]:
    """A call in the app as a history row: RUNNING with no end (a stored call row is written
    with the answer), named by its step once Weir knows it (a planned step)."""
    return {
        "kind": HistoryKind.CALL,
        "step_id": call.item_step,
        "name": call.step_name,
        "attempt": call.attempt - 1,  # as stored rows count it, from 0
        "status": StepStatus.RUNNING,
        "started_at": call.started_at,
        "ended_at": None,
        "detail": {},
    }


def links_json(links: RunLinks) -> dict[str, Any]:
    """The runs a run is tied to, by id: invoking parent, invoked children, rerun chain."""
    return {
        "parent_run_id": links.parent.id if links.parent else None,
        "parent_step_id": links.parent_step if links.parent else None,
        "children": {step: child.id for step, child in links.children.items()},
        "original_run_id": links.original.id if links.original else None,
        "reruns": [r.id for r in links.reruns],
    }
