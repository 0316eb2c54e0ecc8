"""Actions beyond one run: cancel every run matching a filter, invoke a function with a
payload, sync an app by its URL, delete an app or move it to another URL."""

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.executor import sync_request
from weir.platform.foundation.jsonvalues import MAX_SAFE_INTEGER
from weir.platform.ingest.validate import MAX_EVENT_BYTES, EventError
from weir.platform.reads import bulk, events, load
from weir.platform.reads.records import RunPage
from weir.platform.runtime.app_moves import MoveUnderWay
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter(prefix="/v1")
MAX_BODY = 64 * 1024
FILTER_FIELDS = ("function_id", "status", "queued_after", "queued_before", "search", "dry_run")
BULK_CANCEL = {
    "type": "object",
    "properties": {
        "function_id": {"type": "string", "description": "the function's slug"},
        "status": {"type": "array", "items": {"type": "string", "enum": ["Queued", "Running"]}},
        "queued_after": {"type": "integer", "description": "Unix ms, inclusive"},
        "queued_before": {"type": "integer", "description": "Unix ms, exclusive"},
        "search": {"type": "string", "description": "a run id, an event id or output text"},
        "dry_run": {"type": "boolean", "description": "only count the runs that would go"},
    },
}
INVOKE = {"type": "object", "properties": {"data": {"type": "object"}}}
APP_URL = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}
STATUS_WORDS = {"queued": "QUEUED", "running": "RUNNING"}


class BadRequest(ValueError):
    pass


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)


APP_URL_WANTED = 'send {"url": "http(s)://..."}: the URL the app serves Inngest at'


async def _app_url(request: Request) -> str | JSONResponse:
    """The `url` of a body naming an app's URL, or the answer saying what is wrong with it."""
    try:
        body = await _body(request, '{"url": "http://127.0.0.1:8000/api/inngest"}')
    except BodyTooLarge as exc:
        return _error(str(exc), 413)
    except BadRequest as exc:
        return _error(str(exc), 400)
    url = body.get("url")
    if set(body) - {"url"} or not isinstance(url, str):
        return _error(APP_URL_WANTED, 400)
    return url


async def _body(request: Request, example: str) -> dict[str, Any]:
    raw = await read_capped(request, MAX_BODY)
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest(f"the body is not JSON; send an object like {example}") from None
    if not isinstance(value, dict):
        raise BadRequest(f"the body must be a JSON object like {example}")
    return value


@router.post(
    "/runs/cancel",
    openapi_extra=docs.json_body(BULK_CANCEL),
    responses=docs.errors(400, 401, 413),
)
async def cancel_matching(request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    """Cancel every queued or running run matching the filter (at most 10,000 per call);
    `dry_run` only counts them."""
    try:
        body = await _body(request, '{"function_id": "my-fn", "dry_run": true}')
        page, dry_run = parse_filter(weir, body)
    except BodyTooLarge as exc:
        return _error(str(exc), 413)
    except BadRequest as exc:
        return _error(str(exc), 400)
    ids = await weir.read(lambda c: bulk.active_run_ids(c, page))
    if dry_run:
        return JSONResponse({"data": {"matched": len(ids), "cancelled": []}})
    done = await weir.cancel_runs(ids, "cancelled in bulk through the API")
    return JSONResponse({"data": {"matched": len(ids), "cancelled": done}})


def parse_filter(weir: Platform, body: dict[str, Any]) -> tuple[RunPage, bool]:
    unknown = sorted(set(body) - set(FILTER_FIELDS))
    if unknown:
        allowed = ", ".join(FILTER_FIELDS)
        raise BadRequest(f"unknown field(s) {', '.join(unknown)}; allowed: {allowed}")
    nulls = sorted(k for k, v in body.items() if v is None)
    if nulls:
        raise BadRequest(f"{', '.join(nulls)} cannot be null: leave a filter out instead")
    slug = body.get("function_id")
    fn_id = None
    if slug is not None:
        fn = weir.registry.by_slug.get(slug) if isinstance(slug, str) else None
        if fn is None:
            raise BadRequest(f"function_id {slug!r} names no registered function")
        fn_id = fn.id
    statuses = _statuses(body.get("status", []))
    after, before = body.get("queued_after"), body.get("queued_before")
    for name, value in (("queued_after", after), ("queued_before", before)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or abs(value) > MAX_SAFE_INTEGER
        ):  # past the store's integers a comparison cannot even be asked
            raise BadRequest(
                f"{name} must be Unix milliseconds (a whole number within ±{MAX_SAFE_INTEGER})"
            )
    search = body.get("search")
    if search is not None and not isinstance(search, str):
        raise BadRequest("search must be a string")
    dry_run = body.get("dry_run", False)
    if not isinstance(dry_run, bool):
        raise BadRequest("dry_run must be true or false")
    if fn_id is None and not statuses and after is None and before is None and not search:
        raise BadRequest(
            "give at least one filter (function_id, status, queued_after, queued_before, "
            "search): cancelling every run needs to be asked for by status"
        )
    page = RunPage(
        function_id=fn_id,
        statuses=statuses,
        since_ms=after,
        until_ms=before,
        search=search or None,
    )
    return page, dry_run


def _statuses(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadRequest('status must be a list like ["Queued", "Running"]')
    found: list[str] = []
    for word in value:
        status = STATUS_WORDS.get(word.lower())
        if status is None:
            raise BadRequest(f"status {word!r} cannot be cancelled; allowed: Queued, Running")
        found.append(status)
    return tuple(found)


@router.post(
    "/functions/{slug}/invoke",
    openapi_extra=docs.json_body(INVOKE),
    responses=docs.errors(400, 401, 404, 413),
)
async def invoke(slug: str, request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    """Start the function now with `data` as its event's data, bypassing its trigger (as
    `step.invoke` does); answers the invoke event's id and the run's id."""
    if slug not in weir.registry.by_slug:
        return _error(f"no function with id {slug!r}", 404)
    try:
        raw = await read_capped(request, MAX_EVENT_BYTES + 1024)
        body = json.loads(raw) if raw.strip() else {}
    except BodyTooLarge as exc:
        return _error(str(exc), 413)
    except (ValueError, RecursionError):
        return _error('the body is not JSON; send {"data": {...}}', 400)
    if not isinstance(body, dict) or set(body) - {"data"}:
        return _error('the body must be {"data": {...}} (data: a JSON object)', 400)
    data = body.get("data", {})
    if not isinstance(data, dict):
        return _error("data must be a JSON object", 400)
    try:
        event_id = await weir.invoke(slug, data)
    except EventError as exc:
        return _error(str(exc), 400)
    found = await weir.read(lambda c: events.event_runs(c, event_id))
    return JSONResponse({"data": {"event_id": event_id, "run_ids": [r.id for r in found]}})


@router.post(
    "/apps", openapi_extra=docs.json_body(APP_URL), responses=docs.errors(400, 401, 409, 413)
)
async def sync_app(request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    """Sync the app serving at `url`: add it, or sync it again after a change (`weir sync`).
    Weir asks the app (PUT), which registers back; 409 says why that failed."""
    url = await _app_url(request)
    if isinstance(url, JSONResponse):
        return url
    refused = sync_request.refusal(url, weir.settings)
    if refused:  # never contacted
        return _error(refused, 400)
    error = await weir.sync_url(url)
    if error:
        return _error(f"the sync of {url} failed: {error}", 409)
    names = [a.name for a in await weir.read(load.apps) if a.url == url]
    return JSONResponse({"data": {"url": url, "app": names[0] if names else None}})


@router.delete("/apps/{name}", responses=docs.errors(401, 404))
async def delete_app(name: str, weir: Platform = Depends(platform)) -> JSONResponse:
    """Remove the app; its functions are archived (runs under way still finish)."""
    if not await weir.delete_app(name):
        return _error(f"no app named {name!r}", 404)
    return JSONResponse({"data": {"deleted": name}})


@router.patch(
    "/apps/{name}",
    openapi_extra=docs.json_body(APP_URL),
    responses=docs.errors(400, 401, 404, 409, 413),
)
async def move_app(name: str, request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    """Give the app a new URL: Weir syncs from it, and the app there must call itself `name`."""
    url = await _app_url(request)
    if isinstance(url, JSONResponse):
        return url
    if not url.startswith(("http://", "https://")):
        return _error(APP_URL_WANTED, 400)
    status, message = await move(weir, name, url)
    if status != 200:
        return _error(message, status)
    return JSONResponse({"data": {"name": name, "url": url}})


async def move(weir: Platform, name: str, url: str) -> tuple[int, str]:
    """Sync the app `name` from `url`: (200, "") or (status, what went wrong)."""
    before = await weir.read(load.apps)
    if not any(a.name == name for a in before):
        return 404, f"no app named {name!r}"
    try:
        with weir.moves.moving(name, url):  # a sync from `url` as another app is refused whole
            error = await weir.sync_url(url)
    except MoveUnderWay as exc:
        return 409, str(exc)
    if error:
        return 409, f"the sync from {url} failed: {error}"
    after = {a.name: a.url for a in await weir.read(load.apps)}
    if after.get(name) != url:
        found = [n for n, u in after.items() if u == url]
        other = f"synced as the app {found[0]!r}" if found else "did not sync as this app"
        return 409, f"the app at {url} {other}, not as {name!r}; {name!r} keeps its URL"
    return 200, ""
