"""What the pages' buttons and forms do. Plain form posts answered with a redirect (POST ->
303 -> GET), so every action works from the keyboard and without JavaScript."""

import json
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response
from weir.platform.api.deps import platform
from weir.platform.ingest import EventError
from weir.platform.reads import events
from weir.platform.runtime.rerun import RerunError
from weir.platform.service import Platform
from weir.web import data
from weir.web.login import protect_form
from weir.web.render import page

router = APIRouter(include_in_schema=False)


def back(url: str, *, flash: str = "", problem: str = "") -> RedirectResponse:
    note = f"flash={quote(flash)}" if flash else f"problem={quote(problem)}"
    return RedirectResponse(f"{url}?{note}", 303)


@router.post("/runs/{run_id}/cancel", dependencies=[Depends(protect_form)])
async def cancel(run_id: str, weir: Platform = Depends(platform)) -> Response:
    if await weir.cancel(run_id):
        return back(f"/runs/{run_id}", flash="Run cancelled.")
    return back(f"/runs/{run_id}", problem="The run has already ended (or does not exist).")


@router.post("/runs/{run_id}/rerun", dependencies=[Depends(protect_form)])
async def rerun_run(run_id: str, weir: Platform = Depends(platform)) -> Response:
    try:
        new_id = await weir.rerun(run_id)
    except RerunError as exc:
        return back(f"/runs/{run_id}", problem=f"Cannot rerun this run: {exc}.")
    return back(f"/runs/{new_id}", flash=f"Started as a rerun of {run_id}.")


@router.post("/events/send", dependencies=[Depends(protect_form)])
async def send(
    request: Request,
    name: str = Form(""),
    payload: str = Form("{}"),
    weir: Platform = Depends(platform),
) -> Response:
    try:
        body = _event_body(name, payload)
        [event_id] = await weir.send_events(body)
    except (ValueError, EventError) as exc:
        listing = await data.event_list(weir, "", "")
        return page(
            request,
            "events.html",
            400,
            listing=listing,
            name="",
            live=True,
            form={"name": name, "payload": payload},
            form_error=str(exc),
        )
    return back("/events", flash=f"Event {name} sent (id {event_id}).")


def _event_body(name: str, payload: str) -> bytes:
    try:
        value = json.loads(payload or "{}")
    except ValueError as exc:
        raise ValueError(f"the data is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError('the data must be a JSON object, like {"id": 1}')
    return json.dumps({"name": name.strip(), "data": value}).encode()


@router.post("/events/{event_id}/replay", dependencies=[Depends(protect_form)])
async def replay(event_id: str, weir: Platform = Depends(platform)) -> Response:
    found = await weir.read(lambda c: events.event(c, event_id))
    if found is None:
        return back("/events", problem=f"There is no event with id {event_id}.")
    original: dict[str, Any] = dict(found.payload)
    # A replay is a new event: same name, data and user, a fresh id and timestamp.
    fresh = {k: original[k] for k in ("name", "data", "user") if k in original}
    try:
        [new_id] = await weir.send_events(json.dumps(fresh).encode())
    except EventError as exc:
        return back("/events", problem=f"Cannot replay: {exc}")
    return back("/events", flash=f"Replayed {original.get('name')} as event {new_id}.")


@router.post("/apps/sync", dependencies=[Depends(protect_form)])
async def sync_again(url: str = Form(...), weir: Platform = Depends(platform)) -> Response:
    error = await weir.sync_url(url)
    if error:
        return back("/apps", problem=f"Sync of {url} failed: {error}")
    return back("/apps", flash=f"Synced {url}.")
