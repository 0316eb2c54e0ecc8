"""The read API for tools and tests, shaped like Inngest's v1 REST API."""

from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.reads import events, runs
from weir.platform.reads.records import HistoryEntry, Outcome, Run, Step, StoredEvent
from weir.platform.runtime.rerun import RerunError
from weir.platform.service import Platform
from weir.platform.vocabulary import RunStatus

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
    rows = await weir.read(lambda c: events.event_runs(c, event_id))
    return _ok(weir, [run_json(weir, row) for row in rows])


@router.get("/runs/{run_id}", responses=docs.errors(401, 404))
async def get_run(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    now = weir.clock.now_ms()
    view = await weir.read(lambda c: runs.run_view(c, run_id, now))
    if view is None:
        return _missing("run", run_id)
    data = run_json(weir, view.run) | {
        "steps": [step_json(s) for s in view.steps],
        "history": [history_json(h) for h in view.history],
    }
    return _ok(weir, data)


@router.delete("/runs/{run_id}", responses=docs.errors(401, 404))
async def cancel_run(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    run = await weir.read(lambda c: runs.run(c, run_id))
    if run is None:
        return _missing("run", run_id)
    cancelled = await weir.cancel(run_id)
    return _ok(weir, {"run_id": run_id, "cancelled": cancelled})


@router.post("/runs/{run_id}/rerun", responses=docs.errors(401, 404, 409))
async def rerun_run(run_id: str, weir: Platform = Depends(platform)) -> JSONResponse:
    """Start a new run of the run's function from the same event(s), past the pre-run gates
    (runtime/rerun.py); answers the new run's id."""
    run = await weir.read(lambda c: runs.run(c, run_id))
    if run is None:
        return _missing("run", run_id)
    try:
        new_run_id = await weir.rerun(run_id)
    except RerunError as exc:  # the function or the events it needs are gone
        return JSONResponse({"error": f"run {run_id!r} cannot be rerun: {exc}"}, 409)
    return _ok(weir, {"run_id": new_run_id, "original_run_id": run_id})


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
    fn = weir.registry.by_id.get(row.function_id)
    return {
        "function_id": fn.slug if fn else row.function_id,
        "outcome": row.outcome,
        "run_id": row.run_id,
        "detail": row.detail,
        "at": row.at,
    }


def run_json(weir: Platform, run: Run) -> dict[str, Any]:
    fn = weir.registry.by_id.get(run.function_id)
    return {
        "run_id": run.id,
        "function_id": fn.slug if fn else run.function_id,
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
        "waiting": run.waiting,
        "warnings": list(run.warnings),
    }


def step_json(row: Step) -> dict[str, Any]:
    return {
        "id": row.step_id,
        "name": row.name,
        "op": row.op,
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
