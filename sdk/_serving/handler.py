"""Running one function for one invocation request, and turning the outcome into HTTP (§8)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from weir.sdk import _logs
from weir.sdk._context import Context, ContextSync
from weir.sdk._declaring import jsoncheck as _jsoncheck
from weir.sdk._declaring.function import Compiled
from weir.sdk._durations import iso_utc
from weir.sdk._errors import CodedError, NonRetriableError, RetryAfterError, StepError
from weir.sdk._sender import EventSender
from weir.sdk._serving.http import HttpResponse, json_response
from weir.sdk._serving.request import InvocationRequest
from weir.sdk._steps.awaited import NotAwaited
from weir.sdk._steps.execution import Interrupt, RunState, Skip, unexpected
from weir.sdk._steps.ops import RUN_COMPLETE, RUN_ERROR, Op, StepSlot, error_object
from weir.sdk._steps.steps import Step, StepSync
from weir.sdk._tracing import request_context

NO_RETRY = {"x-inngest-no-retry": "true"}


async def invoke(
    fn: Compiled,
    request: InvocationRequest,
    *,
    target: str | None,
    sender: EventSender,
    headers: Mapping[str, str],
) -> HttpResponse:
    state = _state(request, target, fn)
    state.trace = request_context(headers)
    try:
        response = await _respond(fn, request, state, sender, headers)
    finally:
        state.calls.close()
    if state.saved and response.status != 206:
        return _run_error(state.saved, response)
    return response


async def _respond(
    fn: Compiled,
    request: InvocationRequest,
    state: RunState,
    sender: EventSender,
    headers: Mapping[str, str],
) -> HttpResponse:
    try:
        output = await _call(fn, request, state, sender, headers)
        state.calls.check()
        if state.target is not None:  # finishing here would report the run done by mistake
            message = f"the targeted step {state.target} was not reached"
            raise CodedError("step_unexpected", "StepUnexpectedError", message)
        return _completed(output, state.saved)
    except Interrupt as interrupt:
        ops = [op.to_wire() for op in (*state.saved, *interrupt.ops)]
        return json_response(206, ops, NO_RETRY if interrupt.no_retry else None)
    except Skip as skip:
        return _coded(unexpected(skip.display_name))
    except NotAwaited as missing:
        return _not_awaited(fn, missing)
    except Exception as err:
        _logs.function_failed(fn.slug, err)
        return failure(err)


def _not_awaited(fn: Compiled, missing: NotAwaited) -> HttpResponse:
    error = missing.error()
    _logs.log.error("function %s: %s", fn.slug, error.message)
    # The same code would skip the same step again: retrying cannot help.
    return json_response(
        500, {"code": error.code, "message": error.message, "name": error.name}, NO_RETRY
    )


def _state(request: InvocationRequest, target: str | None, fn: Compiled) -> RunState:
    ctx = request.ctx
    return RunState(
        request.steps,
        target=target,
        disable_immediate=ctx.disable_immediate_execution,
        attempt=ctx.attempt,
        max_attempts=ctx.max_attempts,
        checkpoint=fn.checkpoint,
    )


async def _call(
    fn: Compiled,
    request: InvocationRequest,
    state: RunState,
    sender: EventSender,
    headers: Mapping[str, str],
) -> Any:
    info: dict[str, Any] = {
        "event": request.event,
        "events": list(request.events or []),
        "run_id": request.ctx.run_id,
        "attempt": request.ctx.attempt,
        "max_attempts": request.ctx.max_attempts,
        "job_id": headers.get("x-inngest-job-id"),
        "request_id": headers.get("x-request-id"),
        "fences": dict(request.ctx.fences or {}),
        "logger": _logs.ReplayLogger(
            lambda: state.replaying, {"run_id": request.ctx.run_id, "function": fn.slug}
        ),
    }
    if fn.is_async:
        return await fn.handler(Context(**info, step=Step(state, sender.send)))
    # Plain functions run on a worker thread so they can block without stalling the loop.
    ctx = ContextSync(**info, step=StepSync(state, sender.send_sync))
    return await asyncio.to_thread(fn.handler, ctx)


def _completed(output: Any, saved: list[Op]) -> HttpResponse:
    problem = _jsoncheck.problem(output, "the return value")
    if problem is not None:
        message = f"the function returned unserializable data: {problem}"
        return _coded(CodedError("output_unserializable", "OutputUnserializableError", message))
    if not saved:
        return json_response(200, output)
    done = Op(RUN_COMPLETE, StepSlot("complete", None), name="complete", data=output)
    return json_response(206, [op.to_wire() for op in (*saved, done)])


def _run_error(saved: list[Op], response: HttpResponse) -> HttpResponse:
    """A checkpointed request that ended in an error: its steps and the error in one answer,
    so the steps are kept and the error counts as the attempt's (headers kept: no-retry,
    retry-after)."""
    error = json.loads(response.body)
    failed = Op(RUN_ERROR, StepSlot("error", None), name="error", error=error)
    return json_response(206, [op.to_wire() for op in (*saved, failed)], response.headers)


def failure(err: Exception) -> HttpResponse:
    """The 500 answer for an error that escaped the function (§8.2)."""
    if isinstance(err, NonRetriableError):
        return json_response(500, error_object(err, "non_retriable_error"), NO_RETRY)
    if isinstance(err, RetryAfterError):
        retry = {"retry-after": iso_utc(err.retry_at())}
        return json_response(500, error_object(err, "retry_after_error"), retry)
    if isinstance(err, StepError):
        body = {
            "code": "step_errored",
            "message": err.message,
            "name": err.name,
            "stack": err.stack,
        }
        return json_response(500, body, NO_RETRY)
    if isinstance(err, CodedError):
        return _coded(err)
    return json_response(500, error_object(err))


def _coded(err: CodedError) -> HttpResponse:
    return json_response(500, {"code": err.code, "message": err.message, "name": err.name})
