"""Webhook sources over REST (the admin login, as every /v1 route):

GET    /v1/webhooks                          every source (secrets by their end only)
POST   /v1/webhooks                          create: {"name", "scheme", "secrets", ...}
POST   /v1/webhooks/apply                    a declarative file: {"webhooks": [...]}
GET    /v1/webhooks/{name or id}             one source
PUT    /v1/webhooks/{name or id}             replace its settings: {..., "revision": n}
DELETE /v1/webhooks/{name or id}             and its deliveries
POST   /v1/webhooks/{name or id}/test        {"sample": {"body", "headers", "query"},
                                              "transform": {...}?}: the event it makes
GET    /v1/webhooks/{name or id}/deliveries  ?status=&reason=&before=&limit=
POST   /v1/webhooks/{name or id}/deliveries/{delivery}/replay
"""

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform
from weir.platform.webhooks import manage, receive
from weir.platform.webhooks import source as sources
from weir.platform.webhooks.source import SourceError

router = APIRouter(prefix="/v1/webhooks")
MAX_BODY = 256 * 1024  # a source, or a file of them
MAX_SAMPLE = 4 * 1024 * 1024  # a sample payload: up to the largest body a source may take
_OBJECT = docs.json_body({"type": "object"})
STILL_REFUSED = "the transform as it is now still refuses the delivery; `reason` says why"
REPLAY_ANSWERS = docs.errors(401, 404, 409, 503) | {
    422: {"description": STILL_REFUSED, "content": {docs.JSON: {"schema": docs.ERROR}}}
}


class BadInput(Exception):
    pass


async def _json(request: Request, cap: int) -> dict[str, Any]:
    try:
        value = json.loads(await read_capped(request, cap, "request body") or b"{}")
    except BodyTooLarge:
        raise
    except (ValueError, RecursionError) as exc:
        raise BadInput(f"the body is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise BadInput("the body must be a JSON object")
    return value


def _ok(data: Any, status: int = 200) -> JSONResponse:
    return JSONResponse({"data": data}, status)


def _error(status: int, message: str, problems: list[str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if problems:
        body["problems"] = problems
    return JSONResponse(body, status)


async def _guarded(job: Any) -> JSONResponse:
    """The errors every route answers alike."""
    try:
        result: JSONResponse = await job
        return result
    except BodyTooLarge as exc:
        return _error(413, str(exc))
    except BadInput as exc:
        return _error(400, str(exc))
    except SourceError as exc:
        return _error(400, "the webhook source is invalid: " + str(exc), exc.problems)
    except manage.NotFound as exc:
        return _error(404, str(exc))
    except manage.Conflict as exc:
        return _error(409, str(exc))
    except receive.ReplayRefused as exc:
        return _error(exc.status, str(exc))


@router.get("", responses=docs.errors(401))
async def list_sources(weir: Platform = Depends(platform)) -> JSONResponse:
    return _ok([manage.describe(s) for s in await manage.listed(weir)])


@router.post("", responses=docs.errors(400, 401, 409, 413), openapi_extra=_OBJECT)
async def create_source(request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    async def job() -> JSONResponse:
        saved = await manage.create(weir, await _json(request, MAX_BODY))
        return _ok(manage.describe(saved), 201)

    return await _guarded(job())


@router.post("/apply", responses=docs.errors(400, 401, 409, 413), openapi_extra=_OBJECT)
async def apply_file(request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    """Create or change sources by name, as a file declares them; none is deleted."""

    async def job() -> JSONResponse:
        body = await _json(request, MAX_BODY)
        done = await manage.apply_file(weir, body.get("webhooks"))
        return _ok([{"action": a} | manage.describe(s) for a, s in done])

    return await _guarded(job())


@router.get("/{ident}", responses=docs.errors(401, 404))
async def get_source(ident: str, weir: Platform = Depends(platform)) -> JSONResponse:
    async def job() -> JSONResponse:
        return _ok(manage.describe(await manage.get(weir, ident)))

    return await _guarded(job())


@router.put("/{ident}", responses=docs.errors(400, 401, 404, 409, 413), openapi_extra=_OBJECT)
async def update_source(
    ident: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    async def job() -> JSONResponse:
        body = await _json(request, MAX_BODY)
        revision = body.pop("revision", None)
        return _ok(manage.describe(await manage.update(weir, ident, body, revision)))

    return await _guarded(job())


@router.delete("/{ident}", responses=docs.errors(401, 404))
async def delete_source(ident: str, weir: Platform = Depends(platform)) -> JSONResponse:
    async def job() -> JSONResponse:
        await manage.delete(weir, ident)
        return _ok({"deleted": ident})

    return await _guarded(job())


@router.post("/{ident}/test", responses=docs.errors(400, 401, 404, 413), openapi_extra=_OBJECT)
async def try_source(
    ident: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """The event a sample delivery would become, through the saved transform or the one given
    (to try a change before saving it). No signature is checked; nothing is stored."""

    async def job() -> JSONResponse:
        body = await _json(request, MAX_SAMPLE)
        saved = await manage.get(weir, ident)
        source = saved.source
        if body.get("transform") is not None:
            wanted = sources.as_input(source, with_secrets=True) | {"transform": body["transform"]}
            source = sources.parse(wanted)
        return _ok(await manage.preview(weir, source, manage.sample_of(body.get("sample"))))

    return await _guarded(job())


@router.get("/{ident}/deliveries", responses=docs.errors(400, 401, 404))
async def list_deliveries(
    ident: str,
    weir: Platform = Depends(platform),
    status: str | None = None,
    reason: str | None = None,
    before: str | None = None,
    limit: int = 50,
) -> JSONResponse:
    async def job() -> JSONResponse:
        found = await manage.deliveries(
            weir, ident, status=status, reason=reason, before=before, limit=limit
        )
        return _ok([manage.delivery_json(d) for d in found])

    return await _guarded(job())


@router.post("/{ident}/deliveries/{delivery_id}/replay", responses=docs.errors(401, 404, 409, 503))
async def replay_delivery(
    ident: str, delivery_id: str, weir: Platform = Depends(platform)
) -> JSONResponse:
    """A refused delivery whose signature held, through the transform as it is now."""

    async def job() -> JSONResponse:
        saved = await manage.get(weir, ident)
        answer = await receive.replay(weir, saved.id, delivery_id)
        wait = {"retry-after": str(answer.retry_after_s)} if answer.retry_after_s else None
        return JSONResponse(answer.body, answer.status, headers=wait)

    return await _guarded(job())
