"""The public webhook route: POST /webhooks/{id}. Open in start mode: the unguessable id finds
the source, the provider's signature proves the sender (platform/webhooks/)."""

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from sqlalchemy.exc import SQLAlchemyError
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform
from weir.platform.webhooks import receive
from weir.platform.webhooks.delivery import Reason, received
from weir.platform.webhooks.rates import Rates
from weir.platform.webhooks.source import SourceError

router = APIRouter()
RATES = Rates()  # per process, as the limit is documented
MAX_ID = 64
WHY = {
    200: "the event is stored: `ids` holds its id",
    400: "a stale or future signed timestamp, or a body that cannot be read",
    401: "the signature is missing or matches none of the source's secrets",
    404: "no webhook source has that id",
    413: "the body is over the source's max_body_bytes",
    422: "the transform failed or made an event the ingest refuses (replayable once fixed)",
    429: "over the source's rate_per_s: retry after `Retry-After` seconds",
    503: "the store could not commit: retry after `Retry-After` seconds",
}
ANSWER = {"type": "object", "properties": {"status": {"type": "integer"}}}


def _responses() -> dict[int | str, dict[str, Any]]:
    return {
        code: {"description": why, "content": {docs.JSON: {"schema": ANSWER}}}
        for code, why in WHY.items()
    }


@router.post("/webhooks/{source_id}", responses=_responses())
async def deliver(
    source_id: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """A provider's delivery: verified, transformed and stored as an event."""
    try:
        return await _deliver(source_id, request, weir)
    except SourceError as exc:  # stored before a stricter check: the operator must fix it
        error = f"this source's stored settings no longer pass Weir's checks: {exc}"
        answer = {"status": 503, "error": error}
        return JSONResponse(answer, 503, headers={"retry-after": "60"})
    except SQLAlchemyError:
        answer = {"status": 503, "error": "the store is not answering: retry shortly"}
        return JSONResponse(answer, 503, headers={"retry-after": str(receive.RETRY_AFTER_S)})


async def _deliver(source_id: str, request: Request, weir: Platform) -> JSONResponse:
    source = await receive.find(weir, source_id) if len(source_id) <= MAX_ID else None
    if source is None:
        weir.metrics.webhook("", "unknown_source")
        return JSONResponse({"status": 404, "error": "no webhook source has this id"}, 404)
    wait_ms = RATES.retry_after_ms(source_id, source.rate_per_s, weir.clock.now_ms())
    if wait_ms:  # not noted as a delivery (a flood would fill the writer): counted only
        weir.metrics.webhook(source.name, "rate_limited")
        wait_s = str(-(-wait_ms // 1000))
        error = f"over this source's rate of {source.rate_per_s} deliveries a second"
        return JSONResponse({"status": 429, "error": error}, 429, headers={"retry-after": wait_s})
    try:
        body = await read_capped(request, source.max_body_bytes, "webhook body")
    except BodyTooLarge as exc:
        answer = await receive.refuse(weir, source_id, Reason.TOO_LARGE, str(exc))
        return _json(weir, source.name, answer)
    delivery = received(body, request.headers.items(), request.query_params.multi_items())
    return _json(weir, source.name, await receive.deliver(weir, source_id, source, delivery))


def _json(weir: Platform, name: str, answer: receive.Answer) -> JSONResponse:
    outcome = "accepted" if answer.status == 200 else answer.body.get("reason", "unavailable")
    weir.metrics.webhook(name, str(outcome))
    headers = {"retry-after": str(answer.retry_after_s)} if answer.retry_after_s else None
    return JSONResponse(answer.body, answer.status, headers=headers)
