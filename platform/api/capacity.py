"""Live capacities over REST: list them with their drift, change one with the revision read.

    GET  /v1/capacity                    every capacity
    GET  /v1/capacity/{name or id}       one, with its latest changes
    POST /v1/capacity/{name or id}/set   {"capacity": 5, "revision": 3, "actor": "alice"}
    POST /v1/capacity/{name or id}/reset {"revision": 3}: back to the declared value

A change applies only at the revision given (409 with the current state otherwise) and records
who made it: the login that made the request, with the `actor` it names, if any.
"""

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.reads import scopes
from weir.platform.reads.records import Capacity, Change
from weir.platform.runtime.capacity import live as capacities
from weir.platform.security.auth import Credential
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter(prefix="/v1/capacity")
MAX_BODY = 64 * 1024  # three small fields, and room to say why a body is refused
_ACTOR = {"type": "string", "minLength": 1, "maxLength": 100}
_REVISION = {"type": "integer", "minimum": 1, "maximum": capacities.MAX_REVISION}
SET_BODY = docs.json_body(
    {
        "type": "object",
        "properties": {
            "capacity": {"type": "integer", "minimum": 1, "maximum": capacities.MAX_CAPACITY},
            "revision": _REVISION,
            "actor": _ACTOR,
        },
        "required": ["capacity", "revision"],
    }
)
RESET_BODY = docs.json_body(
    {
        "type": "object",
        "properties": {"revision": _REVISION, "actor": _ACTOR},
        "required": ["revision"],
    }
)


def capacity_json(cap: Capacity) -> dict[str, Any]:
    return {
        "kind": cap.kind,
        "id": cap.id,
        "name": cap.name,
        "capacity": cap.capacity,
        "declared": cap.declared,
        "drift": cap.drift,
        "revision": cap.revision,
        "updated_at": cap.updated_at,
        "updated_by": cap.updated_by,
    }


def change_json(change: Change) -> dict[str, Any]:
    return {
        "action": change.action,
        "old": change.old,
        "new": change.new,
        "revision": change.revision,
        "actor": change.actor,
        "at": change.at,
    }


def _ok(weir: Platform, data: Any) -> JSONResponse:
    return JSONResponse({"data": data, "metadata": {"fetched_at": weir.clock.now_ms()}})


@router.get("", responses=docs.errors(401))
async def list_capacities(weir: Platform = Depends(platform)) -> JSONResponse:
    found = await weir.read(scopes.capacities)
    return _ok(weir, [capacity_json(c) for c in found])


@router.get("/{ident:path}", responses=docs.errors(401, 404))
async def get_capacity(ident: str, weir: Platform = Depends(platform)) -> JSONResponse:
    if not _nameable(ident):
        return _missing(ident)
    view = await weir.read(lambda c: scopes.capacity_view(c, ident))
    if view is None:
        return _missing(ident)
    data = capacity_json(view.capacity) | {"changes": [change_json(c) for c in view.changes]}
    return _ok(weir, data)


@router.post(
    "/{ident:path}/set",
    responses=docs.errors(400, 401, 404, 409, 413),
    openapi_extra=SET_BODY,
)
async def set_capacity(
    ident: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """Set the live capacity; running work keeps its slots when it is lowered."""
    return await _change(ident, request, weir, reset=False)


@router.post(
    "/{ident:path}/reset",
    responses=docs.errors(400, 401, 404, 409, 413),
    openapi_extra=RESET_BODY,
)
async def reset_capacity(
    ident: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """Set the live capacity back to the value the code declares."""
    return await _change(ident, request, weir, reset=True)


async def _change(ident: str, request: Request, weir: Platform, *, reset: bool) -> JSONResponse:
    if not _nameable(ident):
        return _missing(ident)
    try:
        body = await _body(request)
    except BodyTooLarge as exc:
        return JSONResponse({"error": str(exc)}, 413)
    if isinstance(body, str):
        return JSONResponse({"error": body}, 400)
    size = None if reset else body.get("capacity")
    problem = capacities.check(size, body.get("revision"), needs_size=not reset)
    declared = body.get("actor")
    if problem is None and declared is not None and not _printable(declared):
        problem = f"actor must be a short printable name, got {declared!r}"
    if problem is not None:
        return JSONResponse({"error": problem}, 400)
    req = capacities.Request(ident, size, int(body["revision"]), actor_of(request, declared))
    try:
        done = await weir.write(lambda tx: capacities.change(tx, req))
    except capacities.CapacityNotFound:
        return _missing(ident)
    except capacities.CapacityOutOfRange as exc:
        return JSONResponse({"error": str(exc)}, 400)
    except capacities.RevisionConflict as conflict:
        data = {"error": str(conflict), "current": capacity_json(conflict.current)}
        return JSONResponse(data, 409)
    return _ok(weir, capacity_json(done))


async def _body(request: Request) -> dict[str, Any] | str:
    try:
        value = json.loads(await read_capped(request, MAX_BODY, "capacity change") or b"{}")
    except ValueError as exc:
        return f"the body is not valid JSON: {exc}"
    except RecursionError:
        return "the body is not valid JSON: it is nested too deeply"
    if not isinstance(value, dict):
        return 'the body must be a JSON object, like {"capacity": 5, "revision": 3}'
    return value


def _nameable(ident: str) -> bool:
    """Could name a capacity (names are printable; PostgreSQL text cannot even hold a NUL)."""
    return 0 < len(ident) <= 4096 and ident.isprintable()


def _printable(value: object) -> bool:
    return isinstance(value, str) and 0 < len(value) <= 100 and value.isprintable()


def actor_of(request: Request, declared: str | None) -> str:
    """Who makes the change: the login the request proved, and the name the caller gave."""
    credential: Credential | None = request.scope.get("state", {}).get("credential")
    weir: Platform = request.app.state.platform
    if credential is None:
        login = "dev mode (no login)"
    elif credential.session is not None:
        login = f"session of {credential.session.user}"
    elif credential.kind == "basic":
        login = f"user {weir.settings.admin_user}"
    else:
        login = "admin token"
    return f"{declared} ({login})" if declared else login


def _missing(ident: str) -> JSONResponse:
    return JSONResponse(
        {"error": f"no capacity named {ident!r} (GET /v1/capacity lists them)"}, 404
    )
