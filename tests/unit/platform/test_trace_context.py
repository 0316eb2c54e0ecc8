"""W3C traceparent parsing and the ids of a run's spans (foundation/trace_context.py), and
the trace derived from a run's rows (reads/traces.py)."""

import pytest
from weir.platform.foundation import trace_context as tc
from weir.platform.foundation.spans import SpanKind, SpanStatus
from weir.platform.foundation.vocabulary import HistoryKind, RunStatus, StepStatus
from weir.platform.reads.traces import TraceNames, derive
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import HistoryEntry, detail_from
from weir.platform.store.views.run_facts import RunLink

GOOD = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_a_valid_traceparent_is_read_with_its_state() -> None:
    parent = tc.parse_traceparent(GOOD.upper(), " a=1,b=2 ")
    assert parent == tc.TraceParent(
        "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", True, "a=1,b=2"
    )
    assert parent.header() == GOOD
    unsampled = tc.parse_traceparent(GOOD[:-2] + "00")
    assert unsampled is not None and not unsampled.sampled


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "garbage",
        "00-" + "0" * 32 + "-00f067aa0ba902b7-01",  # all-zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-" + "0" * 16 + "-01",  # all-zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  # version ff is invalid
        GOOD + "-extra",  # version 00 has exactly four fields
        "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",  # short trace id
    ],
)
def test_a_malformed_traceparent_is_ignored(value: str | None) -> None:
    assert tc.parse_traceparent(value) is None


def test_a_later_version_keeps_its_first_four_fields() -> None:
    parent = tc.parse_traceparent("01" + GOOD[2:] + "-more")
    assert parent is not None and parent.span_id == "00f067aa0ba902b7"


def test_an_overlong_tracestate_is_dropped_not_cut() -> None:
    parent = tc.parse_traceparent(GOOD, "a=" + "x" * tc.MAX_TRACESTATE)
    assert parent is not None and parent.state == ""


@pytest.mark.parametrize("state", ["a=1\r\nx-evil: 1", "a=\x00", "a=ü"])
def test_a_tracestate_with_other_than_printable_ascii_is_dropped(state: str) -> None:
    parent = tc.parse_traceparent(GOOD, state)
    assert parent is not None and parent.state == ""


def _run(**fields: object) -> Run:
    base: dict[str, object] = {
        "id": "01RUN",
        "function_id": "fn",
        "status": RunStatus.COMPLETED,
        "event_ids": ("01EVENT",),
        "created_at": 1_000,
        "score": 1_000,
        "lane": "lane",
        "started_at": 1_100,
        "ended_at": 9_000,
        "output": {"ok": True},
    }
    return Run(**(base | fields))  # type: ignore[arg-type]


def _entry(
    n: int, kind: HistoryKind, status: StepStatus, start: int, end: int | None, **kw: object
) -> HistoryEntry:
    detail = kw.pop("detail", {})
    return HistoryEntry(
        id=n,
        run_id="01RUN",
        kind=kind,
        step_id=str(kw.pop("step_id", "step")),
        name=str(kw.pop("name", "")),
        attempt=int(kw.pop("attempt", 0)),  # type: ignore[call-overload]
        status=status,
        started_at=start,
        ended_at=end,
        detail=detail_from(detail),
    )


ERROR = {"name": "ValueError", "message": "boom", "stack": "Traceback ..."}
ENTRIES = [
    _entry(
        1,
        HistoryKind.CALL,
        StepStatus.FAILED,
        1_100,
        1_200,
        detail={
            "ops": [{"op": "StepError", "id": "s1", "name": "fetch", "error": ERROR}],
            "held": {"gate": "throttle", "key": "k1"},
        },
    ),
    _entry(
        2,
        HistoryKind.CALL,
        StepStatus.COMPLETED,
        3_200,
        3_300,
        attempt=1,
        detail={"ops": [{"op": "StepRun", "id": "s1", "name": "fetch"}]},
    ),
    _entry(
        3,
        HistoryKind.INVOKE,
        StepStatus.COMPLETED,
        3_400,
        5_000,
        step_id="inv",
        detail={"function": "app-child"},
    ),
    _entry(
        4,
        HistoryKind.WAIT,
        StepStatus.RUNNING,
        5_100,
        None,
        step_id="w",
        detail={"event": "t/go", "if": "async.data.k == 1", "until": 99_000},
    ),
]


def test_the_tree_of_a_run_from_its_rows() -> None:
    children = {"01RUN.inv": RunLink("01CHILD", "child-fn", RunStatus.COMPLETED)}
    trace = derive(_run(), ENTRIES, children, TraceNames("app-fn", "app"))
    root, *rest = trace.spans
    assert trace.trace_id == tc.run_trace_id("01RUN") and trace.parent is None
    assert (root.kind, root.span_id, root.parent_id) == (
        SpanKind.RUN,
        tc.run_span_id("01RUN"),
        None,
    )
    assert root.attributes["weir.function.slug"] == "app-fn"
    assert root.attributes["weir.run.queued_ms"] == 100
    kinds = [(s.kind, s.name) for s in rest]
    assert kinds == [
        (SpanKind.GATE, "held by throttle"),
        (SpanKind.CALL, "call function"),
        (SpanKind.STEP, "fetch"),
        (SpanKind.BACKOFF, "backoff to attempt 2"),
        (SpanKind.CALL, "call function"),
        (SpanKind.STEP, "fetch"),
        (SpanKind.INVOKE, "invoke app-child"),
        (SpanKind.WAIT, "wait for t/go"),
    ]
    gate, call1, step1, backoff, call2, step2, invoke, wait = rest
    assert (gate.start_ms, gate.end_ms, gate.attributes["weir.gate.key"]) == (1_000, 1_100, "k1")
    assert call1.span_id == tc.call_span_id("01RUN", "step", 0, 1_100)  # as the header named it
    assert call1.status == SpanStatus.ERROR and call1.attributes["error.type"] == "ValueError"
    assert step1.parent_id == call1.span_id and step1.message == "boom"
    assert step1.attributes["exception.stacktrace"] == "Traceback ..."
    assert (backoff.start_ms, backoff.end_ms) == (1_200, 3_200)
    assert step2.parent_id == call2.span_id and step2.status == SpanStatus.OK
    assert invoke.links[0].trace_id == tc.run_trace_id("01CHILD")
    assert invoke.links[0].span_id == tc.run_span_id("01CHILD")
    # a wait still open when its run ended ends with the run
    assert wait.end_ms == 9_000 and wait.attributes["weir.step.status"] == "CANCELLED"
    assert wait.attributes["weir.wait.if"] == "async.data.k == 1"
    assert all(s.parent_id == root.span_id for s in (gate, call1, backoff, call2, invoke, wait))
    # read again, the same ids
    again = derive(_run(), ENTRIES, children, TraceNames("app-fn", "app"))
    assert [s.span_id for s in again.spans] == [s.span_id for s in trace.spans]
    assert len({s.span_id for s in trace.spans}) == len(trace.spans)


def test_a_sender_parents_the_run_and_payloads_stay_out_unless_asked_for() -> None:
    run = _run(keys={tc.RUN_TRACE_KEY: {"parent": GOOD, "state": "a=1"}}, output={"secret": 1})
    trace = derive(run, [], {}, TraceNames())
    assert trace.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert trace.parent is not None and trace.parent.span_id == "00f067aa0ba902b7"
    assert "weir.run.output" not in trace.spans[0].attributes
    assert trace.spans[0].attributes["weir.run.output_bytes"] == len('{"secret":1}')
    shown = derive(run, [], {}, TraceNames(), payloads=True)
    assert shown.spans[0].attributes["weir.run.output"] == '{"secret":1}'


def test_a_failed_run_says_its_error() -> None:
    trace = derive(_run(status=RunStatus.FAILED, output=ERROR), [], {}, TraceNames())
    assert trace.spans[0].status == SpanStatus.ERROR and trace.spans[0].message == "boom"
