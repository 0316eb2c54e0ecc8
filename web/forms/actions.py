"""What the pages' buttons and forms do. Plain form posts answered with a redirect (POST ->
303 -> GET), so every action works from the keyboard and without JavaScript."""

import json
from typing import Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import RedirectResponse, Response
from weir.platform.api import actions as app_actions
from weir.platform.api.deps import platform
from weir.platform.ingest.validate import EventError
from weir.platform.reads import events, runs
from weir.platform.runtime.rerun import RerunError, RerunInputError, step_input_text
from weir.platform.service import Platform
from weir.web import data
from weir.web.forms.login import protect_form
from weir.web.render import page

router = APIRouter(include_in_schema=False)


def back(url: str, *, flash: str = "", problem: str = "") -> RedirectResponse:
    note = f"flash={quote(flash)}" if flash else f"problem={quote(problem)}"
    return RedirectResponse(f"{url}?{note}", 303)


def confirm_page(
    request: Request, question: str, action: str, fields: list[tuple[str, str]], back: str
) -> Response:
    """Without JavaScript a destructive button lands here first: the same form again, this
    time marked confirmed (with JavaScript, the page asks in a dialog instead)."""
    return page(request, "confirm.html", question=question, action=action, fields=fields, back=back)


@router.post("/runs/{run_id}/cancel", dependencies=[Depends(protect_form)])
async def cancel(
    request: Request,
    run_id: str,
    confirmed: str = Form(""),
    weir: Platform = Depends(platform),
) -> Response:
    if not confirmed:
        here = f"/runs/{run_id}"
        return confirm_page(request, f"Cancel run {run_id}?", f"{here}/cancel", [], here)
    if await weir.cancel(run_id):
        return back(f"/runs/{run_id}", flash="Run cancelled.")
    return back(f"/runs/{run_id}", problem="The run has already ended (or does not exist).")


@router.post("/runs/{run_id}/rerun", dependencies=[Depends(protect_form)])
async def rerun_run(
    run_id: str,
    from_step: str = Form(""),
    input: str = Form(""),
    weir: Platform = Depends(platform),
) -> Response:
    step_input, problem = _step_input(input)
    if problem:
        return back(f"/runs/{run_id}", problem=f"Cannot rerun this run: {problem}.")
    try:
        new_id = await weir.rerun(run_id, from_step or None, step_input)
    except RerunError as exc:
        return back(f"/runs/{run_id}", problem=f"Cannot rerun this run: {exc}.")
    named = await weir.read(lambda c: runs.step_name(c, run_id, from_step)) if from_step else ""
    kept = f", keeping the steps before {named}" if from_step else ""
    given = f", giving {named} a new input" if step_input is not None else ""
    return back(f"/runs/{new_id}", flash=f"Started as a rerun of {run_id}{kept}{given}.")


def _step_input(text: str) -> tuple[list[Any] | None, str]:
    """The form's new input for the step: a JSON array, or nothing (empty)."""
    if not text.strip():
        return None, ""
    try:
        return step_input_text(text.encode(), "the new input"), ""
    except RerunInputError as exc:
        return None, str(exc)


@router.post("/runs/cancel", dependencies=[Depends(protect_form)])
async def cancel_matching(
    request: Request,
    function: str = Form(""),
    status: list[str] = Form([]),
    range: str = Form(""),
    search: str = Form(""),
    confirmed: str = Form(""),
    weir: Platform = Depends(platform),
) -> Response:
    """Cancel every active run the runs page's filter matches."""
    wanted = data.RunFilter(function, tuple(status), range, "", search)
    listing = f"/runs?{wanted.query()}"
    if not wanted.narrowed:
        return RedirectResponse(listing + "&problem=" + quote("Choose a filter first."), 303)
    if not confirmed:
        count = await data.cancellable(weir, wanted)
        fields = [("function", function), ("range", range), ("search", search)]
        return confirm_page(
            request,
            f"Cancel the {count} active run{'' if count == 1 else 's'} matching these filters?",
            "/runs/cancel",
            fields + [("status", s) for s in status],
            listing,
        )
    done = await data.cancel_matching(weir, wanted)
    flash = f"Cancelled {len(done)} run{'' if len(done) == 1 else 's'}."
    return RedirectResponse(f"{listing}&flash={quote(flash)}", 303)


@router.post("/functions/{slug}/invoke", dependencies=[Depends(protect_form)])
async def invoke(
    slug: str, payload: str = Form("{}"), weir: Platform = Depends(platform)
) -> Response:
    here = f"/functions/{quote(slug)}"
    if slug not in weir.registry.by_slug:
        return back("/functions", problem=f"There is no function with id {slug}.")
    try:
        value = json.loads(payload or "{}")
    except ValueError as exc:
        return back(here, problem=f"Cannot invoke: the data is not valid JSON: {exc}")
    if not isinstance(value, dict):
        return back(here, problem='Cannot invoke: the data must be a JSON object, like {"id": 1}')
    try:
        event_id = await weir.invoke(slug, value)
    except EventError as exc:
        return back(here, problem=f"Cannot invoke: {exc}")
    started = await weir.read(lambda c: events.event_runs(c, event_id))
    if not started:
        return back(here, flash=f"Invoked (event {event_id}); a gate held the run back.")
    return back(f"/runs/{started[0].id}", flash=f"Invoked {slug} with your data.")


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
            system=False,
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


@router.post("/apps/{name}/delete", dependencies=[Depends(protect_form)])
async def delete_app(
    request: Request, name: str, confirmed: str = Form(""), weir: Platform = Depends(platform)
) -> Response:
    if not confirmed:
        question = (
            f"Delete the app {name}? Its functions stop taking events; "
            "syncing it again brings it back."
        )
        return confirm_page(request, question, f"/apps/{quote(name)}/delete", [], "/apps")
    if not await weir.delete_app(name):
        return back("/apps", problem=f"There is no app named {name}.")
    return back("/apps", flash=f"Deleted the app {name}.")


@router.post("/apps/{name}/url", dependencies=[Depends(protect_form)])
async def move_app(name: str, url: str = Form(""), weir: Platform = Depends(platform)) -> Response:
    if not url.startswith(("http://", "https://")):
        return back("/apps", problem="Give the app's new URL, starting with http:// or https://.")
    status, message = await app_actions.move(weir, name, url)
    if status != 200:
        return back("/apps", problem=f"The URL of {name} was not changed: {message}.")
    return back("/apps", flash=f"{name} now syncs from {url}.")


@router.post("/apps/sync", dependencies=[Depends(protect_form)])
async def sync_again(url: str = Form(...), weir: Platform = Depends(platform)) -> Response:
    error = await weir.sync_url(url)
    if error:
        return back("/apps", problem=f"Sync of {url} failed: {error}")
    return back("/apps", flash=f"Synced {url}.")
