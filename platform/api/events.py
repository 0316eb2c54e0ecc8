"""The event API: POST /e/{event_key}."""

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.ingest.validate import MAX_EVENT_BYTES, MAX_EVENTS, EventError
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter()
MAX_BODY = MAX_EVENTS * 1024 + MAX_EVENT_BYTES * 4  # a generous cap before parsing


@router.post(
    "/e/{event_key}",
    openapi_extra=docs.json_body(docs.EVENTS),
    responses=docs.errors(400, 401, 413, schema=docs.EVENT_ERROR),
)
async def send_events(
    event_key: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    if not weir.event_key_allowed(event_key):
        return JSONResponse({"ids": [], "status": 401, "error": "Event key not found"}, 401)
    try:
        body = await read_capped(request, MAX_BODY)
    except BodyTooLarge as exc:
        return JSONResponse({"ids": [], "status": 413, "error": str(exc)}, 413)
    try:
        ids = await weir.send_events(body)
    except EventError as exc:
        return _bad(str(exc))
    return JSONResponse({"ids": ids, "status": 200})


def _bad(message: str) -> JSONResponse:
    return JSONResponse({"ids": [], "status": 400, "error": message}, 400)
