"""A run as a trace: a tree of spans derived from the rows the run wrote anyway.

Nothing is written for it. The run's row gives the run span (and the sender's context its
event came with, kept in `runs.keys`); each `history` row gives a span: a call to the app
(with the steps its answer reported under it, and the wait before it: queued, held by a gate
or a retry's backoff), a sleep, a wait for an event, an invoke (linked to the child run's
trace), an AI request. Span ids come from `foundation.trace_context`, so a re-read gives the
same ids and a call's span is the parent the executor named in that call's `traceparent`.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import orjson
from sqlalchemy import Connection
from weir.platform.foundation import trace_context as tc
from weir.platform.foundation.record_type import record
from weir.platform.foundation.spans import (
    AttrValue,
    Span,
    SpanKind,
    SpanLink,
    SpanStatus,
    Trace,
)
from weir.platform.foundation.vocabulary import HistoryKind, Opcode, RunStatus, StepStatus
from weir.platform.store.records import catalog
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import CallOp, HistoryEntry
from weir.platform.store.views import run_facts
from weir.platform.store.views.run_facts import RunItem, RunLink

DISCOVERY = "step"  # the step id of a call that runs the function from the top
HELD_KEY = "held"  # in a call's history detail: the gate that last held the call, if any
ERROR_TEXT_MAX = 2048  # an error message or stack kept in an attribute, at most


@record
class TraceNames:
    """What the store's rows name by id only: the function's slug and its app's name (or
    its id, which `load_trace` turns into its name)."""

    function: str = ""
    app: str = ""
    app_id: str = ""


def names_in(conn: Connection) -> dict[str, TraceNames]:
    """Every function's names, by function id (what an export process keeps)."""
    apps = {a.id: a.name for a in catalog.list_apps(conn)}
    return {
        f.id: TraceNames(f.slug, apps.get(f.app_id, f.app_id), f.app_id)
        for f in catalog.all_functions(conn)
    }


def load_trace(
    conn: Connection,
    run_id: str,
    names: Callable[[str], TraceNames],
    payloads: bool = False,
) -> Trace | None:
    """The run's trace, read in three statements; None if there is no such run. `names`
    gives a function id's names; `payloads`: the run's output goes in an attribute."""
    run = run_records.get_run(conn, run_id)
    if run is None:
        return None
    entries = step_records.list_history(conn, run_id)
    correlations = [f"{run_id}.{e.step_id}" for e in entries if e.kind == HistoryKind.INVOKE]
    children = run_facts.runs_by_correlation(conn, correlations) if correlations else {}
    flying = (
        [] if run.ended else [i for i in run_facts.run_items(conn, [run_id])[run_id] if i.leased]
    )
    named = names(run.function_id)
    if named.app_id and not named.app:  # known by id only: named as its users name it
        app = next((a.name for a in catalog.list_apps(conn) if a.id == named.app_id), "")
        named = TraceNames(named.function, app or named.app_id, named.app_id)
    return derive(run, entries, children, named, payloads, flying)


def span_json(span: Span) -> dict[str, Any]:
    """A span as REST answers it (and the UI reads it)."""
    return {
        "span_id": span.span_id,
        "parent_id": span.parent_id,
        "name": span.name,
        "kind": str(span.kind),
        "start_ms": span.start_ms,
        "end_ms": span.end_ms,
        "duration_ms": None if span.end_ms is None else span.end_ms - span.start_ms,
        "status": str(span.status),
        "message": span.message or None,
        "attributes": {
            k: list(v) if isinstance(v, tuple) else v for k, v in span.attributes.items()
        },
        "links": [{"trace_id": x.trace_id, "span_id": x.span_id} for x in span.links],
    }


def trace_json(trace: Trace) -> dict[str, Any]:
    return {
        "trace_id": trace.trace_id,
        "run_id": trace.run_id,
        "ended": trace.ended,
        "parent": None if trace.parent is None else trace.parent.to_json(),
        "spans": [span_json(s) for s in trace.spans],
    }


# -- deriving ----------------------------------------------------------------------------------
def derive(
    run: Run,
    entries: Sequence[HistoryEntry],
    children: Mapping[str, RunLink],
    names: TraceNames,
    payloads: bool = False,
    flying: Sequence[RunItem] = (),
) -> Trace:
    """The trace of `run` from its history rows; `flying`: its calls in the app right now
    (a call's row is written with its answer), shown as open call spans."""
    parent = tc.stored_parent(run.keys)
    trace_id = tc.run_trace_id(run.id, parent)
    root = tc.run_span_id(run.id)
    spans = [_run_span(run, names, root, payloads)]
    last_end: dict[str, tuple[int, bool]] = {}  # step id -> when its last call ended, failed
    previous_end = run.created_at
    for entry in entries:
        if entry.kind == HistoryKind.CALL:
            call = _call_span(run, entry, root)
            wait = _wait_before(run, entry, call.span_id, root, previous_end, last_end)
            if wait is not None:
                spans.append(wait)
            spans.append(call)
            spans.extend(_step_spans(run, entry, call))
            end = entry.ended_at if entry.ended_at is not None else entry.started_at
            last_end[entry.step_id or DISCOVERY] = (end, entry.status == StepStatus.FAILED)
            previous_end = max(previous_end, end)
        else:
            spans.append(_entry_span(run, entry, root, children))
    spans.extend(_in_flight(run, item, root) for item in flying if item.claimed_at is not None)
    return Trace(trace_id, run.id, run.ended, parent, tuple(spans))


def _run_span(run: Run, names: TraceNames, span_id: str, payloads: bool) -> Span:
    attributes: dict[str, AttrValue] = {
        "weir.span.kind": str(SpanKind.RUN),
        "weir.run.id": run.id,
        "weir.run.status": str(run.status),
        "weir.function.id": run.function_id,
        "weir.event.ids": run.event_ids,
        "weir.run.steps": run.step_count,
        "weir.run.state_bytes": run.state_bytes,
    }
    _put(attributes, "weir.function.slug", names.function)
    _put(attributes, "weir.app.id", names.app)
    _put(attributes, "weir.event.id", run.trigger_id)
    _put(attributes, "weir.batch.id", run.batch_id)
    _put(attributes, "weir.cron", run.cron)
    _put(attributes, "weir.run.rerun_of", run.original_run_id)
    _put(attributes, "weir.run.invoked_by", run.correlation_id)
    _put(attributes, "weir.run.queued_ms", _gap(run.created_at, run.started_at))
    for name, value in sorted(run.keys.items()):  # the evaluated keys of its gates
        if isinstance(value, dict) and isinstance(value.get("key"), str) and value["key"]:
            attributes[f"weir.key.{name}"] = value["key"]
    if run.ended:
        output = orjson.dumps(run.output, default=str)
        attributes["weir.run.output_bytes"] = len(output)
        if payloads:
            attributes["weir.run.output"] = output[:ERROR_TEXT_MAX].decode(errors="replace")
    status, message = SpanStatus.UNSET, ""
    if run.status == RunStatus.COMPLETED:
        status = SpanStatus.OK
    elif run.status == RunStatus.FAILED:
        error = run.output if isinstance(run.output, dict) else {}
        status, message = SpanStatus.ERROR, _error_attributes(attributes, error)
    return Span(
        span_id,
        None,
        names.function or run.function_id,
        SpanKind.RUN,
        run.created_at,
        run.ended_at,
        status,
        message,
        attributes,
    )


def _call_span(run: Run, entry: HistoryEntry, root: str) -> Span:
    step_id = entry.step_id or DISCOVERY
    span_id = tc.call_span_id(run.id, step_id, entry.attempt, entry.started_at)
    ran = [o for o in entry.detail.ops if o.op not in (Opcode.STEP_PLANNED,)]
    target = _step_name(entry, step_id)
    attributes: dict[str, AttrValue] = {
        "weir.span.kind": str(SpanKind.CALL),
        "weir.run.id": run.id,
        "weir.step.id": step_id,
        "weir.call.attempt": entry.attempt + 1,
        "weir.call.status": str(entry.status),
        "weir.call.ops": len(entry.detail.ops),
    }
    _put(attributes, "weir.call.returned", entry.detail.returned or None)
    _put(attributes, "http.response.status_code", entry.detail.http_status)
    status, message = SpanStatus.OK, ""
    if entry.status == StepStatus.FAILED:
        failed = next((o.error for o in ran if o.error), None) or entry.detail.error or {}
        status, message = SpanStatus.ERROR, _error_attributes(attributes, failed)
    return Span(
        span_id,
        root,
        f"call {target}",
        SpanKind.CALL,
        entry.started_at,
        entry.ended_at,
        status,
        message,
        attributes,
    )


def _in_flight(run: Run, item: RunItem, root: str) -> Span:
    """A call the app has not answered yet: open, from its claim (its id is its claim's; the
    answered call's span is named by the request's own start)."""
    started = item.claimed_at or run.created_at
    attributes: dict[str, AttrValue] = {
        "weir.span.kind": str(SpanKind.CALL),
        "weir.run.id": run.id,
        "weir.step.id": item.step_id,
        "weir.call.attempt": item.attempt + 1,
        "weir.call.in_flight": True,
    }
    target = "function" if item.step_id == DISCOVERY else item.step_id
    return Span(
        tc.child_span_id(tc.call_span_id(run.id, item.step_id, item.attempt, started), "claim"),
        root,
        f"call {target}",
        SpanKind.CALL,
        started,
        None,
        SpanStatus.UNSET,
        "",
        attributes,
    )


def _step_name(entry: HistoryEntry, step_id: str) -> str:
    """What the call was sent for: its step's name, or the function from the top."""
    if step_id == DISCOVERY:
        return "function"
    found = next((o.name for o in entry.detail.ops if o.id == step_id and o.name), "")
    return found or entry.name or step_id


def _wait_before(
    run: Run,
    entry: HistoryEntry,
    call_span: str,
    root: str,
    previous_end: int,
    last_end: Mapping[str, tuple[int, bool]],
) -> Span | None:
    """The time between what came before (the run's creation, or its last call's end) and
    this call: a retry's backoff, a gate that held it, or the queue."""
    step_id = entry.step_id or DISCOVERY
    before = last_end.get(step_id)
    held = entry.detail.data.get(HELD_KEY)
    held = held if isinstance(held, dict) else {}
    gate = str(held.get("gate") or "")
    if entry.attempt > 0 and before is not None and before[1]:
        kind, since, name = SpanKind.BACKOFF, before[0], f"backoff to attempt {entry.attempt + 1}"
    elif gate and gate != "retry":
        kind, since, name = SpanKind.GATE, previous_end, f"held by {gate}"
    else:
        kind, since, name = SpanKind.QUEUED, previous_end, "queued"
    if entry.started_at <= since:
        return None  # started at once: no wait to show
    attributes: dict[str, AttrValue] = {
        "weir.span.kind": str(kind),
        "weir.run.id": run.id,
        "weir.step.id": step_id,
        "weir.call.attempt": entry.attempt + 1,
    }
    if kind == SpanKind.GATE:
        attributes["weir.gate"] = gate
        _put(attributes, "weir.gate.key", str(held["key"]) if held.get("key") else None)
    what = f"wait:{kind}"
    return Span(
        tc.child_span_id(call_span, what),
        root,
        name,
        kind,
        since,
        entry.started_at,
        SpanStatus.UNSET,
        "",
        attributes,
    )


def _step_spans(run: Run, entry: HistoryEntry, call: Span) -> list[Span]:
    """The steps the call's answer reported having run: their results' spans share the
    call's time (an answer tells no step's own timing)."""
    found = []
    for op in entry.detail.ops:
        if op.op not in (Opcode.STEP_RUN, Opcode.STEP, Opcode.STEP_ERROR, Opcode.STEP_FAILED):
            continue
        found.append(_step_span(run, entry, call, op))
    return found


def _step_span(run: Run, entry: HistoryEntry, call: Span, op: CallOp) -> Span:
    attributes: dict[str, AttrValue] = {
        "weir.span.kind": str(SpanKind.STEP),
        "weir.run.id": run.id,
        "weir.step.id": op.id,
        "weir.step.op": op.op,
        "weir.step.attempt": entry.attempt + 1,
    }
    status, message = SpanStatus.OK, ""
    if op.op in (Opcode.STEP_ERROR, Opcode.STEP_FAILED):
        status, message = SpanStatus.ERROR, _error_attributes(attributes, op.error or {})
        attributes["weir.step.final"] = op.op == Opcode.STEP_FAILED
    return Span(
        tc.child_span_id(call.span_id, f"step:{op.id}"),
        call.span_id,
        op.name or op.id,
        SpanKind.STEP,
        call.start_ms,
        call.end_ms,
        status,
        message,
        attributes,
    )


_ENTRY_KINDS = {
    HistoryKind.SLEEP: SpanKind.SLEEP,
    HistoryKind.WAIT: SpanKind.WAIT,
    HistoryKind.INVOKE: SpanKind.INVOKE,
    HistoryKind.AI: SpanKind.AI,
}


def _entry_span(run: Run, entry: HistoryEntry, root: str, children: Mapping[str, RunLink]) -> Span:
    kind = _ENTRY_KINDS.get(entry.kind, SpanKind.STEP)
    step_id = entry.step_id or ""
    detail = entry.detail
    attributes: dict[str, AttrValue] = {
        "weir.span.kind": str(kind),
        "weir.run.id": run.id,
        "weir.step.id": step_id,
        "weir.step.status": str(entry.status),
    }
    _put(attributes, "weir.until_ms", detail.until)
    links: tuple[SpanLink, ...] = ()
    if kind == SpanKind.WAIT:
        _put(attributes, "weir.wait.event", detail.event or None)
        _put(attributes, "weir.wait.if", detail.expression)
    elif kind == SpanKind.INVOKE:
        _put(attributes, "weir.invoke.function", detail.function or None)
        child = children.get(f"{run.id}.{step_id}")
        if child is not None:
            attributes["weir.invoke.run_id"] = child.id
            links = (
                SpanLink(
                    tc.run_trace_id(child.id),
                    tc.run_span_id(child.id),
                    {"weir.run.id": child.id},
                ),
            )
    elif kind == SpanKind.AI:
        _put(attributes, "url.full", detail.url or None)
    status, message = SpanStatus.UNSET, ""
    end = entry.ended_at
    if entry.status == StepStatus.FAILED:
        status, message = SpanStatus.ERROR, _error_attributes(attributes, detail.error or {})
    elif entry.status == StepStatus.TIMED_OUT:
        attributes["weir.wait.timed_out"] = True
    elif end is not None:
        status = SpanStatus.OK
    if end is None and run.ended:  # still open when the run ended: it ended with the run
        end = run.ended_at
        attributes["weir.step.status"] = str(StepStatus.CANCELLED)
    verb = {SpanKind.WAIT: "wait for", SpanKind.INVOKE: "invoke"}.get(kind, str(kind))
    target = {SpanKind.WAIT: detail.event, SpanKind.INVOKE: detail.function}.get(kind, "")
    name = f"{verb} {target}" if target else f"{verb} {entry.name or step_id}"
    return Span(
        tc.entry_span_id(run.id, str(entry.kind), step_id),
        root,
        name,
        kind,
        entry.started_at,
        end,
        status,
        message,
        attributes,
        links,
    )


def _error_attributes(attributes: dict[str, AttrValue], error: Mapping[str, Any]) -> str:
    """The error's type, message and stack as attributes; its message."""
    name = error.get("name") or error.get("error")
    message = str(error.get("message") or "")[:ERROR_TEXT_MAX]
    _put(attributes, "error.type", str(name) if name else "Error")
    _put(attributes, "exception.message", message or None)
    stack = error.get("stack")
    _put(attributes, "exception.stacktrace", str(stack)[:ERROR_TEXT_MAX] if stack else None)
    return message


def _put(attributes: dict[str, AttrValue], name: str, value: AttrValue | None) -> None:
    if value is not None and value != "":
        attributes[name] = value


def _gap(since: int, until: int | None) -> int | None:
    return None if until is None else max(0, until - since)
