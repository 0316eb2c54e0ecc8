"""POST /v0/gql: the Dev Server GraphQL queries that Inngest's SDK tooling sends.

Schema-first with ariadne: `gql_schema.graphql` holds the types (named as Inngest names them,
so existing queries validate unchanged); the resolvers below read through `Platform.read`.
A run's child spans are its steps; a span's `outputID` is an opaque token naming
(run, step), resolved back to that step's memo — or, for the root span, to the run's output.
"""

import base64
import binascii
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ariadne import (
    MutationType,
    ObjectType,
    QueryType,
    format_error,
    graphql,
    load_schema_from_path,
    make_executable_schema,
)
from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from graphql import GraphQLError, GraphQLResolveInfo
from weir.platform.api import gql_checks as checks
from weir.platform.api import run_reads
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.foundation.bounded_pool import PoolBusy
from weir.platform.foundation.vocabulary import (
    ENDED,
    WRAPPED_MEMO_OPS,
    HistoryKind,
    Opcode,
    RunStatus,
    StepStatus,
)
from weir.platform.functions.describe import describe_trigger
from weir.platform.reads import events, runs, traces
from weir.platform.reads.records import HistoryEntry, Run, Step
from weir.platform.reads.run_state import CallInFlight
from weir.platform.reads.runs import RunView
from weir.platform.registry import Function
from weir.platform.runtime.rerun import RerunError, RerunInputError, step_input_text
from weir.platform.security.bodies import BodyTooLarge, read_capped
from weir.platform.service import Platform

router = APIRouter(prefix="/v0")
MAX_QUERY_BYTES = 256 * 1024  # the SDK tooling's queries are a few KiB; tokens are bounded too
Info = GraphQLResolveInfo[dict[str, Any]]  # the context holds the Platform
query = QueryType()
mutation = MutationType()
function_run = ObjectType("FunctionRunV2")

STEP_OPS: dict[str, str] = {
    Opcode.STEP_RUN: "RUN",
    Opcode.STEP_FAILED: "RUN",
    Opcode.SLEEP: "SLEEP",
    Opcode.WAIT_FOR_EVENT: "WAIT_FOR_EVENT",
    Opcode.WAIT_FOR_SIGNAL: "WAIT_FOR_SIGNAL",
    Opcode.INVOKE_FUNCTION: "INVOKE",
}
# RunTraceSpanStatus has no TIMED_OUT: a wait that timed out completed (with null).
SPAN_STATUS: dict[str, str] = {StepStatus.TIMED_OUT: StepStatus.COMPLETED}
OPEN_KINDS = {
    HistoryKind.SLEEP: "SLEEP",
    HistoryKind.WAIT: "WAIT_FOR_EVENT",
    HistoryKind.INVOKE: "INVOKE",
}


@router.post(
    "/gql",
    openapi_extra=docs.json_body(docs.GQL_QUERY),
    responses=docs.errors(400, 413, 503, schema=docs.GQL_ERRORS) | docs.errors(401),
)
async def gql(request: Request, weir: Platform = Depends(platform)) -> JSONResponse:
    try:
        body = json.loads(await read_capped(request, MAX_QUERY_BYTES, "GraphQL request"))
    except BodyTooLarge as exc:
        return _errors([str(exc)], 413)
    except (ValueError, RecursionError):
        return _errors(["the request body is not JSON"], 400)
    query_text = body.get("query") if isinstance(body, dict) else None
    if not isinstance(query_text, str) or not query_text:
        return _errors(['send {"query": "<a GraphQL query>", "variables": {...}}'], 400)
    try:  # parsed and checked on threads of its own: neither the event loop nor store reads wait
        variables = body.get("variables")
        document = await checks.QUERIES.run(lambda: checks.checked(SCHEMA, query_text, variables))
    except PoolBusy as exc:
        return _errors([str(exc)], 503)
    except checks.QueryRefused as exc:
        return JSONResponse({"errors": [format_error(e) for e in exc.errors]}, 400)
    ok, result = await graphql(
        SCHEMA,
        body,
        context_value={"platform": weir},
        query_document=document,
        query_validator=checks.already_checked,
    )
    # Resolver errors still answer 200 with partial data, as GraphQL servers do.
    return JSONResponse(result, 200 if ok or "data" in result else 400)


def _errors(messages: list[str], status: int) -> JSONResponse:
    return JSONResponse({"errors": [{"message": m} for m in messages]}, status)


def _weir(info: Info) -> Platform:
    value: Platform = info.context["platform"]
    return value


# -- shared shapes -----------------------------------------------------------------------------
def iso(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def output_id(run_id: str, step_id: str = "") -> str:
    raw = f"{run_id}/{step_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_output_id(token: str) -> tuple[str, str]:
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise GraphQLError(f"unknown output id {token!r}") from None
    run_id, sep, step_id = text.partition("/")
    if not sep or not run_id:
        raise GraphQLError(f"unknown output id {token!r}")
    return run_id, step_id


def function_json(fn: Function) -> dict[str, Any]:
    return {
        "id": fn.id,
        "slug": fn.slug,
        "name": fn.config.name,
        "appID": fn.app_id,
        "url": fn.url,
        "triggers": [describe_trigger(t) for t in fn.config.triggers],
    }


def _run_json(weir: Platform, run: Run) -> dict[str, Any]:
    fn = weir.registry.by_id.get(run.function_id)
    return {
        "id": run.id,
        "functionID": weir.function_slug(run.function_id),
        "function": function_json(fn) if fn else None,
        "status": run.status,
        "queuedAt": iso(run.created_at),
        "startedAt": iso(run.started_at),
        "endedAt": iso(run.ended_at),
        "finishedAt": iso(run.ended_at),
        "output": _text(run.output) if run.ended else None,
    }


# -- queries -----------------------------------------------------------------------------------
@query.field("event")
async def resolve_event(_: Any, info: Info, query: dict[str, Any]) -> Any:
    weir = _weir(info)
    event_id = str(query["eventId"])

    found = await weir.read(lambda c: events.event_detail(c, event_id))
    if found is None:
        return None
    row, run_rows = found.event, found.runs
    ended = [r for r in run_rows if r.status in ENDED]
    return {
        "id": row.id,
        "name": row.name,
        "createdAt": iso(row.received_at),
        "raw": _text(row.payload),
        "payload": _text(row.payload),
        "totalRuns": len(run_rows),
        "pendingRuns": len(run_rows) - len(ended),
        "functionRuns": [_run_json(weir, r) for r in run_rows],
    }


@query.field("run")
async def resolve_run(_: Any, info: Info, runID: str) -> Any:
    weir = _weir(info)
    view = await run_reads.run_view(weir, runID)
    if view is None:
        return None
    return _run_json(weir, view.run) | {"_view": view, "state": view.state.to_json()}


@function_run.field("trace")
async def resolve_trace(parent: dict[str, Any], info: Info, **_: Any) -> Any:
    return root_span(parent["_view"], _weir(info))


@function_run.field("spans")
async def resolve_spans(parent: dict[str, Any], info: Info) -> Any:
    found = await run_reads.run_trace(_weir(info), parent["_view"].run.id)
    if found is None:
        return []
    return [
        {
            "spanID": s["span_id"],
            "parentSpanID": s["parent_id"],
            "traceID": found.trace_id,
            "name": s["name"],
            "kind": s["kind"],
            "startedAt": iso(s["start_ms"]),
            "endedAt": iso(s["end_ms"]),
            "durationMs": s["duration_ms"],
            "status": s["status"],
            "message": s["message"],
            "attributes": s["attributes"],
        }
        for s in traces.trace_json(found)["spans"]
    ]


@query.field("runTrace")
async def resolve_run_trace(_: Any, info: Info, runID: str) -> Any:
    weir = _weir(info)
    view = await run_reads.run_view(weir, runID)
    if view is None:
        raise GraphQLError(f"no run with id {runID!r}")
    return root_span(view, weir)


@query.field("runTrigger")
async def resolve_run_trigger(_: Any, info: Info, runID: str) -> Any:
    view = await run_reads.run_view(_weir(info), runID)
    if view is None:
        raise GraphQLError(f"no run with id {runID!r}")
    first = view.events[0] if view.events else None
    return {
        "eventName": first.name if first is not None else None,
        "IDs": [e.id for e in view.events],
        "payloads": [_text(e.payload) for e in view.events],
        "timestamp": iso(first.received_at if first is not None else view.run.created_at),
        "isBatch": view.run.batch_id is not None,
        "batchID": view.run.batch_id,
        "cron": view.run.cron,
    }


@query.field("runTraceSpanOutputByID")
async def resolve_output(_: Any, info: Info, outputID: str) -> Any:
    run_id, step_id = parse_output_id(outputID)
    weir = _weir(info)
    if not step_id:
        run = await weir.read(lambda c: runs.run(c, run_id))
        if run is None:
            raise GraphQLError(f"unknown output id {outputID!r}")
        return run_output(run)
    step = await weir.read(lambda c: runs.step(c, run_id, step_id))
    if step is None:
        raise GraphQLError(f"unknown output id {outputID!r}")
    return step_output(step.op, step.memo)


@query.field("functions")
async def resolve_functions(_: Any, info: Info) -> Any:
    fns = _weir(info).registry.by_slug.values()
    return [function_json(fn) for fn in sorted(fns, key=lambda f: f.slug)]


# -- outputs -----------------------------------------------------------------------------------
def run_output(run: Run) -> dict[str, Any]:
    if not run.ended:
        return {"data": None, "error": None}
    if run.status == RunStatus.COMPLETED:
        return {"data": _text(run.output), "error": None}
    return {"data": None, "error": error_json(run.output)}


def step_output(op: str, memo: Any) -> dict[str, Any]:
    if op in WRAPPED_MEMO_OPS and isinstance(memo, dict):
        if "error" in memo:
            return {"data": None, "error": error_json(memo["error"])}
        return {"data": _text(memo.get("data")), "error": None}
    return {"data": _text(memo), "error": None}  # sleeps (null) and waits (the event or null)


def error_json(error: Any) -> dict[str, Any]:
    if not isinstance(error, dict):
        return {"message": str(error), "name": "Error", "stack": None}
    stack = error.get("stack")
    return {
        "message": str(error.get("message") or ""),
        "name": str(error.get("name") or "Error"),
        "stack": stack if isinstance(stack, str) else None,
    }


def _text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


# -- spans -------------------------------------------------------------------------------------
def root_span(view: RunView, weir: Platform) -> dict[str, Any]:
    run = view.run
    fn = weir.registry.by_id.get(run.function_id)
    children = step_spans(view)
    return _span(
        span_id=run.id,
        name=fn.config.name if fn else run.function_id,
        status=run.status,
        times=(run.created_at, run.started_at, run.ended_at),
        output=output_id(run.id) if run.ended else None,
        children=children,
    ) | {"isRoot": True, "attempts": None}


def step_spans(view: RunView) -> list[dict[str, Any]]:
    """Memoized steps in order, then the steps still open (sleeping, waiting, invoking), then
    the calls in the app."""
    started = view.run.started_at or view.run.created_at
    spans: list[dict[str, Any]] = []
    for step in view.steps:
        first = _first_start(view.history, step.step_id)
        spans.append(_step_span(view, step, first if first is not None else started))
        started = step.at
    done = {s.step_id for s in view.steps}
    for row in view.history:
        if row.kind in OPEN_KINDS and row.ended_at is None and row.step_id not in done:
            spans.append(_open_span(view.run.id, row))
    return spans + [_in_flight_span(view.run.id, c, started) for c in view.in_flight]


def _in_flight_span(run_id: str, call: CallInFlight, queued: int) -> dict[str, Any]:
    """A call in the app: its step's span once Weir knows the step (a planned one), else a
    span saying what the call does (it finds the function's next step as it runs)."""
    began = call.started_at if call.started_at is not None else queued
    return _span(
        span_id=call.step_id or f"{run_id}.call.{call.item_id}",
        name=call.step_name or call.step_id or call.finding,
        status=StepStatus.RUNNING,
        times=(queued, began, None),
        output=None,
        children=[],
        parent=run_id,
    ) | {
        "stepID": call.step_id,
        "stepOp": "RUN" if call.step_id else None,  # a planned step is a step.run
        "attempts": call.attempt,
    }


def _step_span(view: RunView, step: Step, started: int) -> dict[str, Any]:
    status = view.step_status.get(step.step_id, StepStatus.COMPLETED)
    return _span(
        span_id=step.step_id,
        name=step.name or step.step_id,
        status=SPAN_STATUS.get(status, status),
        times=(started, started, step.at),
        output=output_id(view.run.id, step.step_id),
        children=[],
        parent=view.run.id,
    ) | {
        "stepID": step.step_id,
        "stepOp": STEP_OPS.get(step.op),
        "attempts": len(view.attempts.get(step.step_id, [])) or 1,
    }


def _open_span(run_id: str, row: HistoryEntry) -> dict[str, Any]:
    return _span(
        span_id=row.step_id or str(row.id),
        name=row.name or row.step_id or row.kind,
        status=StepStatus.WAITING,
        times=(row.started_at, row.started_at, None),
        output=None,
        children=[],
        parent=run_id,
    ) | {"stepID": row.step_id, "stepOp": _open_op(row), "attempts": 1}


def _open_op(row: HistoryEntry) -> str:
    return "WAIT_FOR_SIGNAL" if row.detail.signal else OPEN_KINDS[row.kind]


def _span(
    *,
    span_id: str,
    name: str,
    status: str,
    times: tuple[int, int | None, int | None],
    output: str | None,
    children: list[dict[str, Any]],
    parent: str | None = None,
) -> dict[str, Any]:
    queued, started, ended = times
    duration = ended - started if started is not None and ended is not None else None
    return {
        "spanID": span_id,
        "name": name,
        "status": status,
        "queuedAt": iso(queued),
        "startedAt": iso(started),
        "endedAt": iso(ended),
        "duration": duration,
        "isRoot": False,
        "parentSpanID": parent,
        "stepID": None,
        "stepOp": None,
        "outputID": output,
        "childrenSpans": children,
    }


def _first_start(rows: list[HistoryEntry], step_id: str) -> int | None:
    starts = [r.started_at for r in rows if r.step_id == step_id]
    return min(starts) if starts else None


@mutation.field("rerun")
async def resolve_rerun(
    _: Any, info: Info, runID: str, fromStep: dict[str, Any] | None = None
) -> str:
    """Inngest's `rerun`: the new run's id. `fromStep.input` is a JSON array as text (Inngest
    refuses anything else too); an error names what was wrong."""
    step = fromStep.get("stepID") if fromStep else None
    raw = fromStep.get("input") if fromStep else None
    try:
        given = None if raw is None else step_input_text(_bytes(raw), "fromStep.input")
    except RerunInputError as exc:
        raise GraphQLError(str(exc)) from None
    try:
        return await _weir(info).rerun(runID, step, given)
    except RerunError as exc:
        raise GraphQLError(f"run {runID!r} cannot be rerun: {exc}") from None


def _bytes(raw: Any) -> bytes:
    """A `Bytes` value as given: text, or a list of byte values (anything else: no bytes)."""
    if isinstance(raw, str):
        return raw.encode()
    try:
        return bytes(raw)
    except (TypeError, ValueError):
        return b""


SCHEMA = make_executable_schema(
    load_schema_from_path(str(Path(__file__).with_name("gql_schema.graphql"))),
    query,
    mutation,
    function_run,
)
