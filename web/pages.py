"""The HTML pages: runs, one run, events, one event, functions, apps."""

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from weir.platform.api import run_reads
from weir.platform.api.deps import platform
from weir.platform.reads import catalog, events
from weir.platform.service import Platform
from weir.web import data, display, event_detail, run_detail
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
    view = await run_reads.run_view(weir, run_id)
    if view is None:
        raise NotFound("Run not found", f"There is no run with id {run_id!r}.")
    apps = {a.id: a.name for a in await weir.read(catalog.apps)}
    return page(request, "run.html", **run_detail.context(weir, view, apps))


@router.get("/events")
async def events_page(
    request: Request, name: str = "", before: str = "", weir: Platform = Depends(platform)
) -> HTMLResponse:
    listing = await data.event_list(weir, name, before)
    return page(request, "events.html", listing=listing, name=name, live=not before)


@router.get("/events/{event_id}")
async def event_page(request: Request, event_id: str, weir: Platform = Depends(platform)) -> Any:
    found = await weir.read(lambda c: events.event_effects(c, event_id))
    if found is None:
        raise NotFound("Event not found", f"There is no event with id {event_id!r}.")
    return page(request, "event.html", **event_detail.context(weir, found))


@router.get("/functions")
async def functions_page(request: Request, weir: Platform = Depends(platform)) -> HTMLResponse:
    return page(request, "functions.html", functions=await data.function_cards(weir))


@router.get("/apps")
async def apps_page(request: Request, weir: Platform = Depends(platform)) -> HTMLResponse:
    return page(request, "apps.html", apps=await data.app_cards(weir))
