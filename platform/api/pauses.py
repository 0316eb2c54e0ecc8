"""Pausing and resuming a function over REST (docs/operations.md, Pausing a function).

    GET  /v1/functions                  every function, paused or not
    GET  /v1/functions/{slug or id}     one, with its paused state and the audit of its pauses
    POST /v1/functions/{slug or id}/pause   {"mode": "skip"|"hold", "in_progress": "pause"|"cancel"}
    POST /v1/functions/{slug or id}/resume  {}

Each change records who made it (the login of the request, and the `actor` it names).
"""

import json
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.capacity import actor_of
from weir.platform.api.deps import platform
from weir.platform.api.object_bodies import BadBody, read_object
from weir.platform.foundation.vocabulary import InProgress, PauseMode
from weir.platform.reads.pauses import PauseChange, pause_view
from weir.platform.registry import Function, StoredPause
from weir.platform.runtime import pausing
from weir.platform.service import Platform

router = APIRouter(prefix="/v1/functions")
MAX_BODY = 64 * 1024
MODES = ", ".join(PauseMode)
IN_PROGRESS = ", ".join(InProgress)
_ACTOR = {"type": "string", "minLength": 1, "maxLength": 100}
PAUSE_BODY = docs.json_body(
    {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": list(PauseMode), "default": "skip"},
            "in_progress": {"type": "string", "enum": list(InProgress), "default": "pause"},
            "actor": _ACTOR,
        },
    }
)
RESUME_BODY = docs.json_body({"type": "object", "properties": {"actor": _ACTOR}})


def pause_json(pause: StoredPause | None) -> dict[str, Any] | None:
    if pause is None:
        return None
    return {
        "mode": pause.mode,
        "in_progress": pause.in_progress,
        "paused_at": pause.paused_at,
        "paused_by": pause.paused_by,
    }


def change_json(change: PauseChange) -> dict[str, Any]:
    return {
        "action": change.action,
        "mode": change.mode,
        "in_progress": change.in_progress,
        "actor": change.actor,
        "at": change.at,
        "runs_cancelled": change.runs,
    }


def function_json(weir: Platform, fn: Function) -> dict[str, Any]:
    paused = weir.registry.paused.get(fn.id)
    return {
        "id": fn.id,
        "slug": fn.slug,
        "name": fn.config.name,
        "app_id": fn.app_id,
        "paused": paused is not None,
        "pause": pause_json(paused),
    }


def _ok(weir: Platform, data: Any) -> JSONResponse:
    return JSONResponse({"data": data, "metadata": {"fetched_at": weir.clock.now_ms()}})


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)


def _find(weir: Platform, ident: str) -> Function | None:
    fn = weir.registry.by_slug.get(ident) or weir.registry.by_id.get(ident)
    return None if fn is None or fn.archived else fn


def _missing(ident: str) -> JSONResponse:
    return _error(f"no function {ident!r} is registered (GET /v1/functions lists them)", 404)


@router.get("", responses=docs.errors(401))
async def list_functions(weir: Platform = Depends(platform)) -> JSONResponse:
    found = sorted(weir.registry.by_slug.values(), key=lambda fn: fn.slug)
    return _ok(weir, [function_json(weir, fn) for fn in found])


@router.get("/{ident}", responses=docs.errors(401, 404))
async def get_function(ident: str, weir: Platform = Depends(platform)) -> JSONResponse:
    fn = _find(weir, ident)
    if fn is None:
        return _missing(ident)
    view = await weir.read(lambda c: pause_view(c, fn.id))
    data = function_json(weir, fn) | {
        "paused": view.pause is not None,
        "pause": pause_json(view.pause),
        "pause_changes": [change_json(c) for c in view.changes],
    }
    return _ok(weir, data)


@router.post("/{ident}/pause", responses=docs.errors(400, 401, 404, 413), openapi_extra=PAUSE_BODY)
async def pause_function(
    ident: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """Pause the function: `skip` stores its events and starts no run (Inngest's), `hold`
    starts runs that wait; the runs under way wait at their next step (`in_progress` pause)
    or are cancelled now (`cancel`)."""
    body = await _body(request, {"mode", "in_progress", "actor"})
    if isinstance(body, JSONResponse):
        return body
    mode, in_progress = body.get("mode", PauseMode.SKIP), body.get("in_progress", "pause")
    if not isinstance(mode, str) or mode not in set(PauseMode):
        return _error(f"mode must be one of {MODES}, got {mode!r}", 400)
    if not isinstance(in_progress, str) or in_progress not in set(InProgress):
        return _error(f"in_progress must be one of {IN_PROGRESS}, got {in_progress!r}", 400)
    actor = _actor(request, body)
    if isinstance(actor, JSONResponse):
        return actor
    bound = weir.settings.paused_run_bound_ms
    asked = pausing.PauseAsked(ident, PauseMode(mode), InProgress(in_progress), actor, bound)
    try:
        done = await weir.pause(asked)
    except pausing.FunctionNotFound:
        return _missing(ident)
    return _ok(weir, _done_json(done))


@router.post(
    "/{ident}/resume", responses=docs.errors(400, 401, 404, 409, 413), openapi_extra=RESUME_BODY
)
async def resume_function(
    ident: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """Resume the function: its waiting runs go on through every gate in their order."""
    body = await _body(request, {"actor"})
    if isinstance(body, JSONResponse):
        return body
    actor = _actor(request, body)
    if isinstance(actor, JSONResponse):
        return actor
    try:
        done = await weir.resume(ident, actor)
    except pausing.FunctionNotFound:
        return _missing(ident)
    except pausing.NotPaused as exc:
        return _error(str(exc), 409)
    return _ok(weir, _done_json(done))


def _done_json(done: pausing.PauseDone) -> dict[str, Any]:
    return {
        "id": done.function_id,
        "slug": done.slug,
        "paused": done.pause is not None,
        "pause": pause_json(done.pause),
        "runs_cancelled": done.cancelled,
    }


async def _body(request: Request, allowed: set[str]) -> dict[str, Any] | JSONResponse:
    example = '{"mode": "hold"}'
    try:
        return await read_object(
            request, MAX_BODY, "pause or resume", example, allowed, loads=json.loads, empty=b"{}"
        )
    except BadBody as bad:
        return bad.response()


def _actor(request: Request, body: dict[str, Any]) -> str | JSONResponse:
    declared = body.get("actor")
    if declared is not None and not (
        isinstance(declared, str) and 0 < len(declared) <= 100 and declared.isprintable()
    ):
        return _error(f"actor must be a short printable name, got {declared!r}", 400)
    return actor_of(request, declared)
