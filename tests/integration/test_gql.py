"""POST /v0/gql answers the queries Inngest's SDK tooling sends, from real runs.

A weir.sdk app is served over loopback; Weir runs in-process behind FastAPI's TestClient, so
events go in through POST /e/x and the executor drives the app over HTTP.
"""

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.settings import Settings
from weir.sdk import Context, RetryAfterError, Weir, serve
from weir.sdk._client import compile_all
from weir.sdk._serving.register import register_payload

from tests.api.helpers import LOCAL
from tests.support.ports import free_port

pytestmark = pytest.mark.integration

EVENT_RUNS = """query Q($id: ID!) {
  event(query: { eventId: $id }) { id name functionRuns { id status functionID } }
}"""
RUN = """query Q($id: String!) {
  run(runID: $id) {
    id status output
    trace { name status outputID childrenSpans { name outputID status stepOp attempts } }
  }
}"""
TRIGGER = """query Q($id: String!) {
  runTrigger(runID: $id) { eventName IDs payloads isBatch }
}"""
OUTPUT = """query Q($id: String!) {
  runTraceSpanOutputByID(outputID: $id) { data error { message name stack } }
}"""


def _sdk_app() -> tuple[Weir, FastAPI]:
    client = Weir("gqltest", dev=True)

    @client.function("ok", event="gql/ok", retries=0)
    async def ok(ctx: Context) -> dict[str, Any]:
        doubled = await ctx.step.run("double", lambda: ctx.event.data["n"] * 2)
        hello = await ctx.step.run("greet", lambda: f"hello {ctx.event.data['who']}")
        return {"doubled": doubled, "hello": hello}

    def explode() -> None:
        raise ValueError("boom")

    @client.function("fail", event="gql/fail", retries=0)
    async def fail(ctx: Context) -> None:
        await ctx.step.run("explode", explode)

    @client.function("nap", event="gql/nap")
    async def nap(ctx: Context) -> str:
        await ctx.step.sleep("long-nap", "1h")
        return "rested"

    @client.function("later", event="gql/later", retries=2)
    async def later(ctx: Context) -> str:
        def busy() -> str:
            if ctx.attempt == 0:
                raise RetryAfterError("the upstream is busy", timedelta(hours=1))
            return "done"

        return await ctx.step.run("call-upstream", busy)

    app = FastAPI()
    serve(app, client)
    return client, app


@pytest.fixture
def app_url() -> Iterator[tuple[str, Weir]]:
    client, app = _sdk_app()
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    _until(lambda: server.started, "the SDK app to start")
    yield f"http://127.0.0.1:{port}/api/inngest", client
    server.should_exit = True
    thread.join(10)


@pytest.fixture
def weir(tmp_path: Path, app_url: tuple[str, Weir]) -> Iterator[TestClient]:
    settings = Settings(database_url=f"sqlite:///{tmp_path}/w.db", retry_delay_ms=10)
    with TestClient(create_app(settings), LOCAL) as http:
        url, client = app_url
        payload = register_payload("gqltest", None, "fast_api", compile_all(client.functions), url)
        answer = http.post("/fn/register", json=payload)
        assert answer.status_code == 200, answer.text
        yield http


def _until(check: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def gql(http: TestClient, query: str, **variables: Any) -> Any:
    answer = http.post("/v0/gql", json={"query": query, "variables": variables})
    body = answer.json()
    assert "errors" not in body, body
    return body["data"]


def send(http: TestClient, name: str, data: dict[str, Any]) -> str:
    answer = http.post("/e/x", json={"name": name, "data": data})
    assert answer.status_code == 200, answer.text
    event_id: str = answer.json()["ids"][0]
    return event_id


def run_of(http: TestClient, event_id: str) -> dict[str, Any]:
    def found() -> Any:
        runs = gql(http, EVENT_RUNS, id=event_id)["event"]["functionRuns"]
        return runs[0] if runs else None

    run: dict[str, Any] = _until(found, "the event's run")
    return run


def settled(http: TestClient, run_id: str, status: str) -> dict[str, Any]:
    def ended() -> Any:
        run = gql(http, RUN, id=run_id)["run"]
        return run if run["status"] == status else None

    run: dict[str, Any] = _until(ended, f"run {run_id} to be {status}")
    return run


def test_event_lists_the_runs_it_started(weir: TestClient) -> None:
    event_id = send(weir, "gql/ok", {"n": 21, "who": "ada"})
    run = run_of(weir, event_id)
    assert run["functionID"] == "gqltest-ok"
    assert run["status"] in ("QUEUED", "RUNNING", "COMPLETED")
    event = gql(weir, EVENT_RUNS, id=event_id)["event"]
    assert (event["id"], event["name"]) == (event_id, "gql/ok")


def test_unknown_event_is_null(weir: TestClient) -> None:
    assert gql(weir, EVENT_RUNS, id="01HZZZZZZZZZZZZZZZZZZZZZZZ") == {"event": None}


def test_completed_run_has_output_and_step_spans(weir: TestClient) -> None:
    run_id = run_of(weir, send(weir, "gql/ok", {"n": 21, "who": "ada"}))["id"]
    run = settled(weir, run_id, "COMPLETED")
    assert json.loads(run["output"]) == {"doubled": 42, "hello": "hello ada"}
    spans = run["trace"]["childrenSpans"]
    assert [(s["name"], s["status"], s["stepOp"]) for s in spans] == [
        ("double", "COMPLETED", "RUN"),
        ("greet", "COMPLETED", "RUN"),
    ]
    outputs = [gql(weir, OUTPUT, id=s["outputID"])["runTraceSpanOutputByID"] for s in spans]
    assert [json.loads(o["data"]) for o in outputs] == [42, "hello ada"]
    assert all(o["error"] is None for o in outputs)
    root = gql(weir, OUTPUT, id=run["trace"]["outputID"])["runTraceSpanOutputByID"]
    assert json.loads(root["data"])["doubled"] == 42


def test_failed_step_output_carries_the_error(weir: TestClient) -> None:
    run_id = run_of(weir, send(weir, "gql/fail", {}))["id"]
    run = settled(weir, run_id, "FAILED")
    [span] = run["trace"]["childrenSpans"]
    assert (span["name"], span["status"]) == ("explode", "FAILED")
    output = gql(weir, OUTPUT, id=span["outputID"])["runTraceSpanOutputByID"]
    assert output["data"] is None
    assert output["error"]["name"] == "ValueError"
    assert output["error"]["message"] == "boom"


def test_sleeping_run_shows_an_open_span_and_cancels(weir: TestClient) -> None:
    run_id = run_of(weir, send(weir, "gql/nap", {}))["id"]

    def sleeping() -> Any:
        spans = gql(weir, RUN, id=run_id)["run"]["trace"]["childrenSpans"]
        # before, the span of its first call, in the app (issue 36 item 2)
        return spans if any(s["stepOp"] == "SLEEP" for s in spans) else None

    [span] = _until(sleeping, "the sleep span")  # the call that slept has answered
    assert (span["name"], span["status"], span["stepOp"]) == ("long-nap", "WAITING", "SLEEP")
    assert span["outputID"] is None
    assert weir.delete(f"/v1/runs/{run_id}").status_code == 200
    run = settled(weir, run_id, "CANCELLED")
    assert run["trace"]["status"] == "CANCELLED"


def test_run_trigger_returns_the_event_payloads(weir: TestClient) -> None:
    event_id = send(weir, "gql/ok", {"n": 1, "who": "bo"})
    run_id = run_of(weir, event_id)["id"]
    trigger = gql(weir, TRIGGER, id=run_id)["runTrigger"]
    assert trigger["eventName"] == "gql/ok"
    assert trigger["IDs"] == [event_id]
    assert trigger["isBatch"] is False
    [payload] = [json.loads(p) for p in trigger["payloads"]]
    assert (payload["name"], payload["data"]) == ("gql/ok", {"n": 1, "who": "bo"})


def test_unknown_ids_give_graphql_errors(weir: TestClient) -> None:
    assert gql(weir, RUN, id="nope") == {"run": None}
    cases = (
        (OUTPUT, "not-an-output", "unknown output id 'not-an-output'"),
        (TRIGGER, "nope", "no run with id 'nope'"),
    )
    for query, ident, message in cases:
        body = weir.post("/v0/gql", json={"query": query, "variables": {"id": ident}}).json()
        assert [e["message"] for e in body["errors"]] == [message]


def test_invalid_query_is_rejected_with_a_message(weir: TestClient) -> None:
    answer = weir.post("/v0/gql", json={"query": "{ run(runID: 1) { nope } }"})
    assert answer.status_code == 400
    assert answer.json()["errors"]
    not_json = weir.post(
        "/v0/gql", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert not_json.status_code == 400


STATE_FIELDS = (
    "kind words gate since until step_id step_name attempt max_attempts key "
    "slots { key used limit holders } event expression function child_run_id error details"
)
STATE = (
    "query Q($id: String!) { run(runID: $id) { state { "
    + STATE_FIELDS
    + " also { "
    + STATE_FIELDS
    + " } } } }"
)


def _both(http: TestClient, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The run from REST and its state from GraphQL."""
    rest: dict[str, Any] = http.get(f"/v1/runs/{run_id}").json()["data"]
    state: dict[str, Any] = gql(http, STATE, id=run_id)["run"]["state"]
    for other in state["also"]:
        other["also"] = []  # asked one level deep
    return rest, state


def test_rest_and_graphql_answer_the_same_run_state(weir: TestClient) -> None:
    napper = run_of(weir, send(weir, "gql/nap", {}))["id"]
    rest, state = _until(
        lambda: (b := _both(weir, napper))[0]["state"]["kind"] == "sleeping" and b, "the sleep"
    )
    assert rest["state"] == state and rest["waiting"] == state  # waiting: the state itself
    assert (state["step_name"], state["words"][:15]) == ("long-nap", "sleeping until ")
    [sleep] = [h for h in rest["history"] if h["kind"] == "sleep"]
    wake = datetime.fromtimestamp(sleep["detail"]["until"] / 1000, UTC)
    assert state["until"] == wake.isoformat(timespec="milliseconds")

    later = run_of(weir, send(weir, "gql/later", {}))["id"]
    rest, state = _until(
        lambda: (b := _both(weir, later))[0]["state"]["kind"] == "backoff" and b, "the backoff"
    )
    assert rest["state"] == state == rest["waiting"]
    assert (state["attempt"], state["max_attempts"]) == (2, 3)
    assert state["error"] == "the upstream is busy"
    assert state["until"].endswith("+00:00")  # a clock time, not epoch ms

    assert weir.delete(f"/v1/runs/{napper}").status_code == 200
    rest, state = _both(weir, napper)
    assert rest["state"] == state and state["kind"] == "ended" and rest["waiting"] is None
    assert [h["status"] for h in rest["history"] if h["kind"] == "sleep"] == ["CANCELLED"]
