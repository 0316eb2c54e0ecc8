"""POST /v1/functions/{slug}/simulate: the flow-control playground over HTTP.

The body is a sequence of events (ms after zero, data); the answer is what Weir's own gates
do with it for the function's synced config (runtime/simulate.py), on a fake clock and a
scratch store. Nothing is written to the real store.
"""

import json
from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.foundation.bounded_pool import BoundedPool, PoolBusy
from weir.platform.runtime.simulate import (
    HORIZON_MS,
    MAX_EVENTS,
    SimEvent,
    SimulationError,
    simulate,
)
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter(prefix="/v1")
MAX_BODY = 2 * 1024 * 1024
# A simulation is seconds of CPU at most: one at a time, on a thread of its own (never the
# store reads' threads), and a short line; past it a 503 says to try again.
SIMULATIONS = BoundedPool("simulations", workers=1, waiting=4)
SIM_EVENT = {
    "type": "object",
    "properties": {
        "at_ms": {"type": "integer", "minimum": 0, "description": "ms after the simulation's zero"},
        "data": {"type": "object"},
        "name": {"type": "string", "description": "defaults to the function's event trigger"},
        "id": {"type": "string", "description": "the event's own id (deduplication)"},
        "ts_ms": {
            "type": "integer",
            "minimum": 0,
            "maximum": HORIZON_MS,
            "description": "its ts, ms after zero",
        },
    },
    "required": ["at_ms"],
}
SIMULATE = {
    "type": "object",
    "properties": {
        "events": {"type": "array", "items": SIM_EVENT, "maxItems": MAX_EVENTS},
        "run_ms": {"type": "integer", "minimum": 0, "description": "how long each run lasts"},
    },
    "required": ["events"],
}
EVENT_FIELDS = ("at_ms", "data", "name", "id", "ts_ms")


class BadRequest(ValueError):
    pass


@router.post(
    "/functions/{slug}/simulate",
    openapi_extra=docs.json_body(SIMULATE),
    responses=docs.errors(400, 401, 404, 413, 503),
)
async def simulate_function(
    slug: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """Play events through the function's real gates on a fake clock; see docs/semantics.md."""
    fn = weir.registry.by_slug.get(slug)
    if fn is None:
        return JSONResponse({"error": f"no function with id {slug!r}"}, 404)
    try:
        raw = await read_capped(request, MAX_BODY, "simulation request")
        sequence, run_ms = parse(raw)
        result = await SIMULATIONS.run(lambda: simulate(fn, sequence, run_ms))
    except BodyTooLarge as exc:
        return JSONResponse({"error": str(exc)}, 413)
    except PoolBusy as exc:
        return JSONResponse({"error": str(exc)}, 503, headers={"retry-after": "1"})
    except (BadRequest, SimulationError) as exc:
        return JSONResponse({"error": str(exc)}, 400)
    return JSONResponse({"data": asdict(result)})


def parse(raw: bytes) -> tuple[list[SimEvent], int]:
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest("the body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest('the body must be a JSON object like {"events": [{"at_ms": 0}]}')
    unknown = sorted(set(body) - {"events", "run_ms"})
    if unknown:
        raise BadRequest(f"unknown field(s) {', '.join(unknown)}; allowed: events, run_ms")
    items = body.get("events")
    if not isinstance(items, list):
        raise BadRequest('"events" must be a list of {"at_ms": <int>, "data": {...}}')
    if len(items) > MAX_EVENTS:
        raise BadRequest(f"{len(items)} events given; at most {MAX_EVENTS} are allowed")
    run_ms = _int(body.get("run_ms", 0), "run_ms")  # null is refused like any non-number
    return [_event(i, item) for i, item in enumerate(items)], run_ms


def _event(i: int, item: Any) -> SimEvent:
    where = f"events[{i}]"
    if not isinstance(item, dict):
        raise BadRequest(f'{where} must be an object like {{"at_ms": 0, "data": {{}}}}')
    unknown = sorted(set(item) - set(EVENT_FIELDS))
    if unknown:
        allowed = ", ".join(EVENT_FIELDS)
        raise BadRequest(f"{where} has unknown field(s) {', '.join(unknown)}; allowed: {allowed}")
    data = item.get("data", {})
    if not isinstance(data, dict):
        raise BadRequest(f"{where}.data must be a JSON object")
    name, own_id = item.get("name"), item.get("id")
    for field, value in (("name", name), ("id", own_id)):
        if field in item and (not isinstance(value, str) or not value.strip()):
            raise BadRequest(f"{where}.{field} must be a non-empty string")
    ts = item.get("ts_ms")
    if "ts_ms" in item and ts is None:
        raise BadRequest(f"{where}.ts_ms must be a whole number of ms after zero, or left out")
    return SimEvent(
        at_ms=_int(item.get("at_ms"), f"{where}.at_ms"),
        data=data,
        name=name,
        id=own_id,
        ts_ms=None if ts is None else _int(ts, f"{where}.ts_ms"),
    )


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"{where} must be a whole number of milliseconds, got {value!r}")
    return value
