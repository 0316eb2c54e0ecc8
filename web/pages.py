"""The HTML pages: runs, one run, events, one event, functions, apps."""

from typing import Any

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from weir.platform.api import run_reads
from weir.platform.api.deps import platform
from weir.platform.reads import events, load
from weir.platform.registry import Function
from weir.platform.service import Platform
from weir.web import (
    data,
    display,
    event_detail,
    lane_pages,
    playground,
    run_detail,
    stacks,
    trace_view,
)
from weir.web.errors import NotFound
from weir.web.forms.login import protect_form
from weir.web.render import page

router = APIRouter(include_in_schema=False)


@router.get("/")
async def home() -> RedirectResponse:
    return RedirectResponse("/runs", 307)


@router.get("/runs")
async def runs_page(
    request: Request,
    function: str = "",
    status: list[str] = Query([]),
    range: str = "",
    before: str = "",
    search: str = "",
    query: str = "",
    weir: Platform = Depends(platform),
) -> HTMLResponse:
    wanted = data.RunFilter(function, tuple(status), range, before, search, query)
    try:
        listing, query_error = await data.run_list(weir, wanted), ""
    except data.BadQuery as error:
        listing, query_error = {"runs": [], "next": None, "searched": None}, str(error)
    fns = sorted((fn.slug, fn.config.name or fn.slug) for fn in weir.registry.by_slug.values())
    queried = bool(query.strip())
    return page(
        request,
        "runs.html",
        400 if query_error else 200,
        listing=listing,
        wanted=wanted,
        functions=fns,
        statuses=display.STATUSES,
        ranges=display.RANGE_LABELS,
        live=not before and not queried,  # a query's page is a bounded scan, not a live feed
        query_error=query_error,
        # the bulk cancel's preview: only for a narrowed list, never "every run", and never
        # beside a query, whose matches it would not be limited to
        cancellable=await data.cancellable(weir, wanted) if wanted.narrowed and not queried else 0,
    )


@router.get("/runs/{run_id}")
async def run_page(request: Request, run_id: str, weir: Platform = Depends(platform)) -> Any:
    view = await run_reads.run_view(weir, run_id)
    if view is None:
        raise NotFound("Run not found", f"There is no run with id {run_id!r}.")
    apps = {a.id: a.name for a in await weir.read(load.apps)}
    found = await run_reads.run_trace(weir, run_id)
    spans = [] if found is None else trace_view.rows(found, weir.clock.now_ms())
    context = run_detail.context(weir, view, apps)
    spans = stacks.share_span_stacks(context, spans)
    return page(request, "run.html", **context, spans=spans)


@router.get("/events")
async def events_page(
    request: Request,
    name: str = "",
    before: str = "",
    system: bool = False,
    replay: str = "",
    query: str = "",
    weir: Platform = Depends(platform),
) -> HTMLResponse:
    try:
        listing, query_error = (
            await data.event_list(weir, name, before, system=system, cel=query),
            "",
        )
    except data.BadQuery as error:
        listing, query_error = {"events": [], "next": None, "searched": None}, str(error)
    form = await _replay_form(weir, replay) if replay else None
    return page(
        request,
        "events.html",
        400 if query_error else 200,
        listing=listing,
        name=name,
        system=system,
        query=query,
        query_error=query_error,
        live=not before and not query.strip(),
        form=form,
        replaying=replay if form else "",
    )


async def _replay_form(weir: Platform, event_id: str) -> dict[str, str] | None:
    """The send form filled with a stored event, to edit and send as a new one."""
    found = await weir.read(lambda c: events.event(c, event_id))
    if found is None:
        return None
    data = found.payload.get("data")
    return {"name": found.name, "payload": display.pretty_value(data if data is not None else {})}


@router.get("/events/{event_id}")
async def event_page(request: Request, event_id: str, weir: Platform = Depends(platform)) -> Any:
    found = await weir.read(lambda c: events.event_effects(c, event_id))
    if found is None:
        raise NotFound("Event not found", f"There is no event with id {event_id!r}.")
    return page(request, "event.html", **event_detail.context(weir, found))


@router.get("/functions")
async def functions_page(
    request: Request, q: str = "", weir: Platform = Depends(platform)
) -> HTMLResponse:
    cards = await data.function_cards(weir)
    wanted = q.strip().lower()
    shown = [c for c in cards if not wanted or wanted in data.search_text(c)]
    return page(request, "functions.html", functions=shown, q=q, total=len(cards))


@router.get("/functions/{slug}")
async def function_page(
    request: Request, slug: str, recorded: bool = False, weir: Platform = Depends(platform)
) -> HTMLResponse:
    fn = _function(weir, slug)
    events_text = await playground.recorded_lines(weir, fn) if recorded else ""
    note = "" if events_text or not recorded else "No recorded event of its trigger is stored."
    return await _function_page(request, weir, fn, events_text or playground.EXAMPLE, note=note)


@router.post("/functions/{slug}/simulate", dependencies=[Depends(protect_form)])
async def simulate_page(
    request: Request,
    slug: str,
    events_text: str = Form("", alias="events"),
    run_ms: str = Form("0"),
    weir: Platform = Depends(platform),
) -> HTMLResponse:
    """A pure computation on a scratch store: answered in place, nothing is written."""
    fn = _function(weir, slug)
    outcome = await playground.play(fn, events_text, run_ms)
    status = 400 if outcome.error else 200
    return await _function_page(request, weir, fn, events_text, run_ms, outcome, status)


def _function(weir: Platform, slug: str) -> Function:
    fn = weir.registry.by_slug.get(slug)
    if fn is None:
        raise NotFound("Function not found", f"There is no function with id {slug!r}.")
    return fn


async def _function_page(
    request: Request,
    weir: Platform,
    fn: Function,
    events_text: str,
    run_ms: str = "0",
    outcome: playground.Outcome | None = None,
    status: int = 200,
    note: str = "",
) -> HTMLResponse:
    card = next(c for c in await data.function_cards(weir) if c["slug"] == fn.slug)
    return page(
        request,
        "function.html",
        status,
        f=card,
        events_text=events_text,
        run_ms=run_ms,
        outcome=outcome,
        note=note,
        lanes=await lane_pages.lane_panel(weir, fn),
        pause_changes=await data.pause_audit(weir, fn),
    )


@router.get("/apps")
async def apps_page(request: Request, weir: Platform = Depends(platform)) -> HTMLResponse:
    cards, unsynced = await data.app_cards(weir), await data.unsynced_apps(weir)
    connect = weir.connect_apps.describe()
    return page(request, "apps.html", apps=cards, unsynced=unsynced, connect=connect)
