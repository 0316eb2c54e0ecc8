"""Signals over REST (docs/protocol.md, Signals), as Inngest's `POST /v1/signals`:

    POST /v1/signals[?wait=30s][&wait_for_run=10s]   {"signal": "order/123", "data": {...}}
    GET  /v1/signals/deliveries/{delivery_id}[?wait=30s]

The signal goes to the one run waiting on it (step.wait_for_signal), or nowhere (404; with
`wait_for_run`, after waiting that long for a run to start waiting on it). With
`wait`, the answer also waits, a bounded time, for the run's reply (weir.sdk `step.reply`);
the delivery, kept with its reply, can be read again later (after a restart too).
"""

import asyncio
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.api.object_bodies import BadBody, read_object
from weir.platform.executor.opchecks import MAX_EVENT_NAME
from weir.platform.foundation import jsonvalues
from weir.platform.functions.parse.durations import parse_duration_ms
from weir.platform.reads import signals as signal_reads
from weir.platform.reads.signals import Delivery
from weir.platform.runtime.steps import signals
from weir.platform.service import Platform

router = APIRouter(prefix="/v1/signals")
MAX_BODY = 512 * 1024  # a signal's data, with its name: as much as an event's data may hold
MAX_ANSWER_WAIT_MS = 60_000  # `?wait=`: the longest a sender may hold its request open
# A waiting sender looks for the reply (it may come from any process) soon, then less often.
POLL_FIRST_S, POLL_MOST_S = 0.005, 0.05
SIGNAL_BODY = docs.json_body(
    {
        "type": "object",
        "required": ["signal"],
        "properties": {
            "signal": {"type": "string", "minLength": 1, "maxLength": MAX_EVENT_NAME},
            "data": {"description": "any JSON: what the waiting step receives"},
        },
    }
)
_WAIT = {
    "name": "wait",
    "in": "query",
    "required": False,
    "schema": {"type": "string"},
    "description": "how long to wait for the run's reply (e.g. 30s; at most 60s)",
}
_FOR_RUN = _WAIT | {
    "name": "wait_for_run",
    "description": "how long to wait for a run to start waiting on the signal (at most 60s)",
}
WAIT_QUERY = {"parameters": [_WAIT]}
SEND_QUERY = {"parameters": [_WAIT, _FOR_RUN]}


def _error(message: str, status: int) -> JSONResponse:
    return JSONResponse({"error": message}, status)


def _delivery_json(d: Delivery) -> dict[str, Any]:
    return {
        "run_id": d.run_id,
        "delivery_id": d.id,
        "signal": d.signal,
        "delivered_at": d.delivered_at,
        "answered": d.answered,
        "answer": d.answer,
        "answered_at": d.answered_at,
    }


def _ok(weir: Platform, d: Delivery) -> JSONResponse:
    # `run_id` at the top too: Inngest's answer is {"run_id": ...}
    body = {"run_id": d.run_id, "data": _delivery_json(d)}
    return JSONResponse(body | {"metadata": {"fetched_at": weir.clock.now_ms()}})


def _wait_ms(request: Request, param: str = "wait") -> int | JSONResponse:
    asked = request.query_params.get(param)
    if asked is None:
        return 0
    try:
        ms = parse_duration_ms(asked)
    except ValueError as exc:
        return _error(f"{param}: {exc}", 400)
    if ms > MAX_ANSWER_WAIT_MS:
        return _error(f"{param}: {asked!r} is longer than 60s, the longest a sender may wait", 400)
    return ms


@router.post(
    "",
    responses=docs.errors(400, 401, 404, 413, 422),
    openapi_extra=SIGNAL_BODY | SEND_QUERY,
)
async def send_signal(request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    """Deliver `data` to the run waiting on `signal`; answers which run received it (404 when
    none waits, 422 when the waiting step's `if` rejects the data: the wait stays open)."""
    wait_ms, for_run_ms = _wait_ms(request), _wait_ms(request, "wait_for_run")
    if isinstance(wait_ms, JSONResponse):
        return wait_ms
    if isinstance(for_run_ms, JSONResponse):
        return for_run_ms
    body = await _body(request)
    if isinstance(body, JSONResponse):
        return body
    signal, data = body
    await _waiter(weir, signal, for_run_ms)
    outcome = await weir.write(lambda tx: signals.deliver(tx, signal, data))
    if outcome is None:
        return _error(
            f"no run is waiting for signal {signal!r} (step.wait_for_signal opens a wait; "
            "a signal sent before it is not kept)",
            404,
        )
    if isinstance(outcome, signals.Rejected):
        return _error(
            f"run {outcome.run_id} waiting for signal {signal!r} rejected it: its condition "
            f"{outcome.expression!r} does not hold for this data (the wait stays open)",
            422,
        )
    found = await _answer(weir, outcome.delivery_id, wait_ms)
    if found is None:  # gone as soon as made: only a retention sweep could do it
        return _error(f"delivery {outcome.delivery_id!r} is gone", 404)
    return _ok(weir, found)


@router.get(
    "/deliveries/{delivery_id}", responses=docs.errors(400, 401, 404), openapi_extra=WAIT_QUERY
)
async def get_delivery(
    delivery_id: str, request: Request, weir: Platform = Depends(platform)
) -> JSONResponse:
    """A delivered signal and the run's reply, if it has replied (waiting up to `wait`)."""
    wait_ms = _wait_ms(request)
    if isinstance(wait_ms, JSONResponse):
        return wait_ms
    found = await _answer(weir, delivery_id, wait_ms)
    if found is None:
        return _error(f"no signal delivery {delivery_id!r}", 404)
    return _ok(weir, found)


async def _waiter(weir: Platform, signal: str, wait_ms: int) -> None:
    """Return once a run waits on `signal`, or `wait_ms` has passed (reads only: the delivery
    that follows is the one write)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_ms / 1000
    pause = POLL_FIRST_S
    while loop.time() < deadline:
        if await weir.read(lambda c: signal_reads.waiting(c, signal)):
            return
        await asyncio.sleep(min(pause, max(0.0, deadline - loop.time())))
        pause = min(pause * 2, POLL_MOST_S)


async def _answer(weir: Platform, delivery_id: str, wait_ms: int) -> Delivery | None:
    """The delivery, once answered or when `wait_ms` has passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_ms / 1000
    pause = POLL_FIRST_S
    while True:
        found = await weir.read(lambda c: signal_reads.delivery(c, delivery_id))
        if found is None or found.answered or loop.time() >= deadline:
            return found
        await asyncio.sleep(min(pause, max(0.0, deadline - loop.time())))
        pause = min(pause * 2, POLL_MOST_S)


async def _body(request: Request) -> tuple[str, Any] | JSONResponse:
    example = '{"signal": "order/123", "data": {}}'
    try:
        value = await read_object(request, MAX_BODY, "signal", example, {"signal", "data"})
    except BadBody as bad:
        return bad.response()
    signal = value.get("signal")
    if not isinstance(signal, str) or not signal.strip():
        return _error(
            f"'signal' must be a non-empty string (the signal's name), got {signal!r:.80}",
            400,
        )
    if len(signal) > MAX_EVENT_NAME or jsonvalues.control_char(signal):
        return _error(
            f"'signal' {signal!r:.80} must be at most {MAX_EVENT_NAME} printable characters", 400
        )
    data = value.get("data")
    unkeepable = jsonvalues.problem(data, "data")
    if unkeepable:
        return _error(unkeepable, 400)
    return signal, data
