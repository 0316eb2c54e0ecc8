"""Runs as traces, sent over OTLP (issue 37): a real Weir process (`--otel`) exporting with the
OpenTelemetry SDK to a real OTLP/HTTP receiver on loopback, which decodes the official
protobuf messages; a real weir.sdk app that journals the trace context of each request."""

import itertools
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until
from tests.support.backends import POSTGRESQL, empty_database
from tests.support.otlp_receiver import OtlpReceiver, Received

pytestmark = pytest.mark.integration

SENDER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SENDER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{SENDER_TRACE}-{SENDER_SPAN}-01"
SPAN_KIND_CLIENT, SPAN_KIND_CONSUMER = 3, 5  # opentelemetry.proto.trace.v1.Span.SpanKind
STATUS_OK, STATUS_ERROR = 1, 2


def _servers(
    tmp: Path,
    endpoint: str,
    *extra: str,
    module: str = "weir_traced",
    app_id: str = "traced",
    app_exports: bool = True,
    database_url: str | None = None,
) -> tuple[WeirServer, AppServer]:
    """Weir exporting to `endpoint`; the app exporting its own spans there too, unless not
    `app_exports` (its exporter is synchronous: a dead collector would hold its requests)."""
    weir = WeirServer(tmp, "--otel", *extra, database_url=database_url)
    weir.env = weir.env | {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_SERVICE_NAME": "weir-under-test",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2",
    }
    app = AppServer(tmp, f"tests.integration.apps.{module}", app_id, weir.url)
    if app_exports:
        app.env = app.env | {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    return weir, app


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as found:
        yield found


@pytest.fixture(scope="module")
def traced(
    receiver: OtlpReceiver, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WeirServer, AppServer]]:
    weir, app = _servers(tmp_path_factory.mktemp("traces"), receiver.endpoint)
    try:
        weir.start()
        app.start()
        app.sync()
        yield weir, app
    finally:
        app.stop()
        weir.stop()


def _send(weir: WeirServer, name: str, data: dict[str, object], **headers: str) -> str:
    resp = httpx.post(
        f"{weir.url}/e/{weir.event_key}", json={"name": name, "data": data}, headers=headers
    )
    assert resp.status_code == 200, resp.text
    ids: list[str] = resp.json()["ids"]
    return ids[0]


def _by_kind(spans: list[Received], kind: str) -> list[Received]:
    return sorted(
        (s for s in spans if s.attributes.get("weir.span.kind") == kind), key=lambda s: s.start_ns
    )


def test_a_run_is_a_trace_under_the_senders_span_and_the_app_sees_its_call_spans(
    traced: tuple[WeirServer, AppServer], receiver: OtlpReceiver
) -> None:
    weir, app = traced
    event_id = _send(
        weir, "t/traced", {"x": 1}, traceparent=TRACEPARENT, tracestate="vendor=opaque"
    )
    run = weir.finished_run(event_id, timeout=60)
    assert run["status"] == "Completed", run
    run_id = run["run_id"]

    def exported() -> list[Received] | None:
        spans = receiver.of_trace(SENDER_TRACE)
        mine = [
            s
            for s in spans
            if s.attributes.get("weir.run.id") == run_id
            and s.resource.get("service.name") != "the-app"
        ]
        return mine if any(s.attributes.get("weir.span.kind") == "run" for s in mine) else None

    spans = wait_until(exported, 30)
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans), "every span has an id of its own"
    [root] = _by_kind(spans, "run")
    # the run continues the sender's trace: its parent is the sender's span
    assert root.parent_id == SENDER_SPAN
    assert root.name == "traced-traced" and root.kind == SPAN_KIND_CONSUMER
    assert root.status == STATUS_OK
    assert root.attributes["weir.function.slug"] == "traced-traced"
    assert root.attributes["weir.app.id"] == "traced"
    assert root.attributes["weir.event.id"] == event_id
    assert root.attributes["weir.run.status"] == "COMPLETED"
    assert isinstance(root.attributes["weir.run.output_bytes"], int)
    assert "weir.run.output" not in root.attributes  # sizes, not payloads, by default
    assert root.resource["service.name"] == "weir-under-test"
    # every other span is inside the tree whose root is the run span
    for span in spans:
        if span is not root:
            assert span.parent_id in ids, span
            assert root.start_ns <= span.start_ns <= span.end_ns <= root.end_ns, span

    calls = _by_kind(spans, "call")
    assert len(calls) >= 4  # load, flaky (failed), flaky (retried), after the sleep, ...
    assert all(c.parent_id == root.span_id and c.kind == SPAN_KIND_CLIENT for c in calls)
    for before, after in itertools.pairwise(calls):
        assert before.end_ns <= after.start_ns  # one call after another
    failed = [c for c in calls if c.status == STATUS_ERROR]
    assert len(failed) == 1
    assert failed[0].attributes["error.type"] == "ValueError"
    assert failed[0].message == "the first attempt fails"

    steps = _by_kind(spans, "step")
    by_name: dict[str, list[Received]] = {}
    for step in steps:
        by_name.setdefault(step.name, []).append(step)
        assert step.parent_id in {c.span_id for c in calls}
    assert [s.status for s in by_name["flaky"]] == [STATUS_ERROR, STATUS_OK]
    assert by_name["flaky"][0].attributes["exception.message"] == "the first attempt fails"
    assert by_name["flaky"][0].attributes["weir.step.attempt"] == 1
    assert by_name["flaky"][1].attributes["weir.step.attempt"] == 2
    assert [s.status for s in by_name["load"]] == [STATUS_OK]

    [backoff] = _by_kind(spans, "backoff")
    assert backoff.parent_id == root.span_id
    assert failed[0].end_ns <= backoff.start_ns < backoff.end_ns <= calls[2].start_ns
    [sleep] = _by_kind(spans, "sleep")
    assert sleep.end_ns - sleep.start_ns >= 900_000_000  # the 1 s nap
    [invoke] = _by_kind(spans, "invoke")
    child_id = invoke.attributes["weir.invoke.run_id"]
    assert isinstance(child_id, str) and len(invoke.links) == 1
    # the invoked run's own trace is exported too, and the link points at its run span
    child_trace, child_span = invoke.links[0]
    child = wait_until(
        lambda: [s for s in receiver.of_trace(child_trace) if s.span_id == child_span], 30
    )
    assert child[0].attributes["weir.run.id"] == child_id

    # The same tree, the same ids, from the REST API (what the run page draws)
    answer = httpx.get(f"{weir.url}/v1/runs/{run_id}/trace").json()["data"]
    assert answer["trace_id"] == SENDER_TRACE and answer["ended"] is True
    assert answer["parent"] == {"parent": TRACEPARENT, "state": "vendor=opaque"}
    assert {(s["span_id"], s["parent_id"]) for s in answer["spans"]} == {
        (s.span_id, s.parent_id if s is not root else None) for s in spans
    }

    # and from GraphQL (a run's `spans`, Weir's own field beside Inngest's `trace`)
    query = "query($id: String!) { run(runID: $id) { spans { spanID parentSpanID traceID kind "
    query += "startedAt attributes } } }"
    body = {"query": query, "variables": {"id": run_id}}
    listed = httpx.post(f"{weir.url}/v0/gql", json=body).json()["data"]["run"]["spans"]
    assert [(s["spanID"], s["parentSpanID"]) for s in listed] == [
        (s["span_id"], s["parent_id"]) for s in answer["spans"]
    ]
    assert {s["traceID"] for s in listed} == {SENDER_TRACE}
    assert listed[0]["kind"] == "run" and listed[0]["attributes"]["weir.run.id"] == run_id

    # Each request the app was sent carried the trace: the call's span as its parent, and
    # the sender's tracestate
    sent = [e for e in app.entries("request") if e["run"] == run_id]
    assert len(sent) == len(calls)
    for entry, call in zip(sent, calls, strict=True):
        version, trace_id, parent, flags = entry["traceparent"].split("-")
        assert (version, trace_id, flags) == ("00", SENDER_TRACE, "01")
        assert parent == call.span_id
        assert entry["tracestate"] == "vendor=opaque"
    # and the app's own spans, made from that header, nest under the calls in the same trace
    app_spans = wait_until(lambda: _app_spans(receiver, run_id, len(calls)), 30)
    assert sorted(s.parent_id or "" for s in app_spans) == sorted(c.span_id for c in calls)
    assert {s.trace_id for s in app_spans} == {SENDER_TRACE}
    # weir.sdk (OpenTelemetry installed in the app) made a span per step it ran, under the
    # app's request span; the failed attempt's says so
    handled = {s.span_id for s in app_spans}

    def sdk_steps() -> list[Received] | None:
        found = [
            s
            for s in receiver.of_trace(SENDER_TRACE)
            if s.scope == "weir.sdk" and s.parent_id in handled
        ]
        return found if len(found) >= 3 else None

    step_spans = sorted(wait_until(sdk_steps, 30), key=lambda s: s.start_ns)
    assert [s.name for s in step_spans] == ["step load", "step flaky", "step flaky"]
    assert [s.status for s in step_spans] == [0, STATUS_ERROR, 0]  # unset, error, unset
    assert [s.attributes["weir.step.attempt"] for s in step_spans] == [1, 1, 2]


def _app_spans(receiver: OtlpReceiver, run_id: str, count: int) -> list[Received] | None:
    found = [
        s
        for s in receiver.spans
        if s.resource.get("service.name") == "the-app" and s.attributes.get("app.run_id") == run_id
    ]
    return found if len(found) >= count else None


def test_the_official_sdks_app_spans_nest_under_weirs_calls(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    weir, app = _servers(
        tmp_path, receiver.endpoint, module="inngest_traced", app_id="inngesttraced"
    )
    try:
        weir.start()
        app.start()
        app.sync()
        event_id = _send(weir, "t/quick", {}, traceparent=TRACEPARENT)
        run_id = weir.finished_run(event_id, timeout=60)["run_id"]
        sent = [e for e in app.entries("request") if e["run"] == run_id]
        assert sent and all(e["traceparent"].split("-")[1] == SENDER_TRACE for e in sent)

        def calls() -> list[Received] | None:
            found = [
                s
                for s in receiver.of_trace(SENDER_TRACE)
                if s.attributes.get("weir.run.id") == run_id
                and s.attributes.get("weir.span.kind") == "call"
            ]
            return found or None

        weir_calls = wait_until(calls, 30)
        app_spans = wait_until(lambda: _app_spans(receiver, run_id, len(sent)), 30)
        assert sorted(s.parent_id or "" for s in app_spans) == sorted(c.span_id for c in weir_calls)
        assert [e["traceparent"].split("-")[2] for e in sent] == [
            c.span_id for c in sorted(weir_calls, key=lambda c: c.start_ns)
        ]
    finally:
        app.stop()
        weir.stop()


def test_a_run_without_a_sender_has_a_trace_of_its_own(
    traced: tuple[WeirServer, AppServer], receiver: OtlpReceiver
) -> None:
    weir, app = traced
    event_id = _send(weir, "t/quick", {}, traceparent="not-a-traceparent")  # ignored
    run = weir.finished_run(event_id, timeout=60)
    sent = [e["traceparent"] for e in app.entries("request") if e["run"] == run["run_id"]]
    assert sent and all(re.fullmatch(r"00-[0-9a-f]{32}-[0-9a-f]{16}-01", t) for t in sent)
    [trace_id] = {t.split("-")[1] for t in sent}  # one trace for all the run's calls
    assert trace_id != SENDER_TRACE
    spans = wait_until(lambda: receiver.of_trace(trace_id), 30)
    [root] = _by_kind(spans, "run")
    assert root.parent_id is None
    assert [c.span_id for c in _by_kind(spans, "call")] == [t.split("-")[2] for t in sent]


def test_a_start_a_throttle_held_shows_as_a_gate_span_with_its_key(
    traced: tuple[WeirServer, AppServer], receiver: OtlpReceiver
) -> None:
    weir, _ = traced
    first, second = (_send(weir, "t/traced-throttle", {"k": "blue"}) for _ in range(2))
    held = weir.finished_run(second, timeout=60)
    assert weir.finished_run(first, timeout=60)["status"] == "Completed"

    def gates() -> list[Received]:
        return [
            s
            for s in receiver.spans
            if s.attributes.get("weir.run.id") == held["run_id"]
            and s.attributes.get("weir.span.kind") == "gate"
        ]

    [gate] = wait_until(gates, 30)
    assert gate.name == "held by throttle"
    assert gate.attributes["weir.gate"] == "throttle"
    assert gate.attributes["weir.gate.key"] == "blue"
    assert gate.end_ns - gate.start_ns >= 1_000_000_000  # the second start waited its turn
    [call] = [
        s for s in receiver.of_trace(gate.trace_id) if s.attributes.get("weir.span.kind") == "call"
    ]
    assert gate.end_ns == call.start_ns


def test_the_call_in_flight_is_an_open_span_until_its_answer(
    traced: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = traced
    event_id = _send(weir, "t/dawdle", {"seconds": 3})

    def flying() -> dict[str, object] | None:
        runs = weir.runs(event_id)
        if not runs:
            return None
        answer = httpx.get(f"{weir.url}/v1/runs/{runs[0]['run_id']}/trace").json()["data"]
        open_calls = [
            s
            for s in answer["spans"]
            if s["kind"] == "call" and s["attributes"].get("weir.call.in_flight")
        ]
        return open_calls[0] if open_calls else None

    span = wait_until(flying, 30)
    assert span["end_ms"] is None and span["status"] == "unset"
    run = weir.finished_run(event_id, timeout=60)
    answer = httpx.get(f"{weir.url}/v1/runs/{run['run_id']}/trace").json()["data"]
    calls = [s for s in answer["spans"] if s["kind"] == "call"]
    assert calls and all(s["end_ms"] is not None for s in calls)
    assert not any(s["attributes"].get("weir.call.in_flight") for s in calls)
    missing = httpx.get(f"{weir.url}/v1/runs/01NOSUCHRUN0000000000000000/trace")
    assert missing.status_code == 404 and "no run" in missing.json()["error"]


def _metric(weir: WeirServer, name: str) -> float:
    text = httpx.get(f"{weir.url}/metrics").text
    found = re.findall(rf"^{re.escape(name)}(?:\{{[^}}]*\}})? ([0-9.e+]+)$", text, re.M)
    return sum(float(v) for v in found)


def test_a_collector_that_is_down_costs_runs_nothing_and_drops_are_counted(
    tmp_path: Path,
) -> None:
    from tests.support.ports import free_port

    nobody = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    weir, app = _servers(tmp_path, nobody, "--otel-queue", "2", app_exports=False)
    try:
        weir.start()
        app.start()
        app.sync()
        started = time.monotonic()
        events = [_send(weir, "t/quick", {"i": i}) for i in range(12)]
        for event_id in events:
            assert weir.finished_run(event_id, timeout=60)["status"] == "Completed"
        # every run ended while the exporter was stuck on the dead collector (its first
        # export alone retries for its timeout): the runs did not wait for it
        took = time.monotonic() - started
        assert took < 60
        wait_until(lambda: _metric(weir, "weir_traces_dropped_total") > 0, 30)
        wait_until(lambda: _metric(weir, "weir_trace_spans_dropped_total") > 0, 60)
        assert _metric(weir, "weir_trace_spans_exported_total") == 0
        # nothing is lost from the store
        assert all(weir.runs(e)[0]["status"] == "Completed" for e in events)
    finally:
        app.stop()
        weir.stop()


def test_a_slow_collector_holds_no_run_and_what_overflows_is_counted(tmp_path: Path) -> None:
    with OtlpReceiver(delay_s=3.0) as slow:
        weir, app = _servers(tmp_path, slow.endpoint, "--otel-queue", "2", app_exports=False)
        weir.env = weir.env | {"OTEL_EXPORTER_OTLP_TIMEOUT": "30"}
        try:
            weir.start()
            app.start()
            app.sync()
            events = [_send(weir, "t/quick", {"i": i}) for i in range(12)]
            # each run ends on its own time while the collector takes 3 s per export
            for event_id in events:
                assert weir.finished_run(event_id, timeout=60)["status"] == "Completed"
            wait_until(lambda: _metric(weir, "weir_traces_dropped_total") > 0, 30)
            wait_until(lambda: _metric(weir, "weir_trace_spans_exported_total") > 0, 60)
            # every run's trace was either delivered or counted as dropped, none lost unsaid

            def accounted() -> float:
                return len(_runs(slow)) + _metric(weir, "weir_traces_dropped_total")

            wait_until(lambda: accounted() >= len(events), 60)
            assert accounted() == len(events)
        finally:
            app.stop()
            weir.stop()


def _runs(receiver: OtlpReceiver) -> set[object]:
    return {
        s.attributes.get("weir.run.id")
        for s in receiver.spans
        if s.attributes.get("weir.span.kind") == "run"
    }


@pytest.mark.postgres
def test_the_export_process_reads_traces_from_postgresql(
    receiver: OtlpReceiver, tmp_path: Path
) -> None:
    with empty_database(POSTGRESQL, tmp_path) as url:
        weir, app = _servers(tmp_path, receiver.endpoint, app_exports=False, database_url=url)
        try:
            weir.start()
            app.start()
            app.sync()
            event_id = _send(weir, "t/quick", {}, traceparent=TRACEPARENT)
            run_id = weir.finished_run(event_id, timeout=60)["run_id"]

            def root() -> list[Received]:
                return [
                    s
                    for s in receiver.of_trace(SENDER_TRACE)
                    if s.attributes.get("weir.run.id") == run_id
                    and s.attributes.get("weir.span.kind") == "run"
                ]

            [span] = wait_until(root, 30)
            assert span.parent_id == SENDER_SPAN
            assert span.attributes["weir.app.id"] == "traced"
        finally:
            app.stop()
            weir.stop()
