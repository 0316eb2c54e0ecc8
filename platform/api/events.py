"""The event API: POST /e/{event_key}.

In `weir start`, wrong keys back off per client address (security/lockout.py): past a few,
that address's requests are refused with 429 before their key is checked, until the lock
ends. Other addresses are never slowed."""

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.foundation.trace_context import parse_traceparent
from weir.platform.ingest.validate import MAX_EVENT_BYTES, MAX_EVENTS, EventError
from weir.platform.security.auth import Auth, client_of
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter()
MAX_BODY = MAX_EVENTS * 1024 + MAX_EVENT_BYTES * 4  # a generous cap before parsing


@router.post(
    "/e/{event_key}",
    openapi_extra=docs.json_body(docs.EVENTS),
    responses=docs.errors(400, 401, 413, 429, schema=docs.EVENT_ERROR),
)
async def send_events(
    event_key: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    refused = _key_refusal(request, weir, event_key)
    if refused is not None:
        return refused
    try:
        body = await read_capped(request, MAX_BODY)
    except BodyTooLarge as exc:
        return JSONResponse({"ids": [], "status": 413, "error": str(exc)}, 413)
    try:
        # W3C Trace Context: the runs continue the sender's trace (a malformed one is ignored)
        trace = parse_traceparent(
            request.headers.get("traceparent"), request.headers.get("tracestate")
        )
        ids = await weir.send_events(body, trace)
    except EventError as exc:
        return _bad(str(exc))
    return JSONResponse({"ids": ids, "status": 200})


def _key_refusal(request: Request, weir: Platform, event_key: str) -> JSONResponse | None:
    """None if the key is accepted; else 401, or 429 while the address is locked out."""
    auth: Auth | None = getattr(request.app.state, "auth", None)  # weir start only
    if auth is None:
        return None  # weir dev takes any key
    client = client_of(request.scope)
    if wait := auth.lockout.key_retry_after_s(client):
        error = f"too many wrong event keys from this address: retry in {wait} s"
        body = {"ids": [], "status": 429, "error": error}
        return JSONResponse(body, 429, headers={"retry-after": str(wait)})
    if weir.event_key_allowed(event_key):
        return None
    auth.lockout.key_failed(client)
    return JSONResponse({"ids": [], "status": 401, "error": "Event key not found"}, 401)


def _bad(message: str) -> JSONResponse:
    return JSONResponse({"ids": [], "status": 400, "error": message}, 400)
