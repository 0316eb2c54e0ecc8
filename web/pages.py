"""The HTML pages: runs, one run, events, one event, functions, apps."""

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from weir.platform.api.deps import platform
from weir.platform.reads import runs
from weir.platform.reads.records import Step
from weir.platform.reads.runs import RunView
from weir.platform.service import Platform
from weir.platform.vocabulary import WRAPPED_MEMO_OPS, RunStatus
from weir.web import data, display, timeline
from weir.web.errors import NotFound
from weir.web.render import page

router = APIRouter(include_in_schema=False)


@router.get("/")
async def home() -> RedirectResponse:
    return RedirectResponse("/runs", 307)


@router.get("/runs")
async def runs_page(
    request: Request,
    function: str = "",
    status: str = "",
    range: str = "",
    before: str = "",
    weir: Platform = Depends(platform),
) -> HTMLResponse:
    wanted = data.RunFilter(function, status, range, before)
    listing = await data.run_list(weir, wanted)
    fns = sorted((fn.slug, fn.config.name or fn.slug) for fn in weir.registry.by_slug.values())
    return page(
        request,
        "runs.html",
        listing=listing,
        wanted=wanted,
        functions=fns,
        statuses=display.STATUSES,
        ranges=display.RANGE_LABELS,
        live=not before,
    )


@router.get("/runs/{run_id}")
async def run_page(request: Request, run_id: str, weir: Platform = Depends(platform)) -> Any:
    now = weir.clock.now_ms()
    view = await weir.read(lambda c: runs.run_view(c, run_id, now))
    if view is None:
        raise NotFound("Run not found", f"There is no run with id {run_id!r}.")
    return page(request, "run.html", **_run_context(weir, view))


def _run_context(weir: Platform, view: RunView) -> dict[str, Any]:
    now = weir.clock.now_ms()
    run = view.run
    names = {s.step_id: s.name for s in view.steps}
    trigger = display.trigger_of(run, {e.id: e.name for e in view.events})
    return {
        "run": display.run_row(weir, run, trigger, now),
        "ended": run.ended,
        "output": display.pretty_value(run.output) if run.ended else "",
        "failed": run.status in (RunStatus.FAILED, RunStatus.CANCELLED),
        "bars": timeline.waterfall(run, view.history, names, now),
        "reasons": timeline.waiting_reasons(run, view.history, now),
        "steps": [_step(s) for s in view.steps],
        "progress": view.progress,
        "events": [
            {
                "id": e.id,
                "name": e.name,
                "at": display.clock(e.received_at),
                "payload": display.pretty_value(e.payload),
            }
            for e in view.events
        ],
        "warnings": list(run.warnings),
        "can_rerun": bool(view.events) and run.function_id in weir.registry.by_id,
    }


def _step(step: Step) -> dict[str, Any]:
    memo = step.memo
    wrapped = isinstance(memo, dict) and step.op in WRAPPED_MEMO_OPS
    error = memo.get("error") if wrapped else None
    value = memo.get("data") if wrapped else memo
    return {
        "id": step.step_id,
        "name": step.name or step.step_id,
        "op": step.op,
        "at": display.clock(step.at),
        "error": json.dumps(error, indent=2) if error is not None else None,
        "output": json.dumps(value, indent=2, ensure_ascii=False),
    }


@router.get("/events")
async def events_page(
    request: Request, name: str = "", before: str = "", weir: Platform = Depends(platform)
) -> HTMLResponse:
    listing = await data.event_list(weir, name, before)
    return page(request, "events.html", listing=listing, name=name, live=not before)


@router.get("/events/{event_id}")
async def event_page(request: Request, event_id: str, weir: Platform = Depends(platform)) -> Any:
    event = await data.one_event(weir, event_id)
    if event is None:
        raise NotFound("Event not found", f"There is no event with id {event_id!r}.")
    return page(request, "event.html", event=event)


@router.get("/functions")
async def functions_page(request: Request, weir: Platform = Depends(platform)) -> HTMLResponse:
    return page(request, "functions.html", functions=await data.function_cards(weir))


@router.get("/apps")
async def apps_page(request: Request, weir: Platform = Depends(platform)) -> HTMLResponse:
    return page(request, "apps.html", apps=await data.app_cards(weir))
