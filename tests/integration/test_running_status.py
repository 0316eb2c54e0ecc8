"""A run whose call is in the app is Running everywhere (issue 36, items 1, 3, 4), against a
real `weir dev` and a real weir.sdk app whose calls stay in the app until the test releases
them: REST, the UI's list with its Status filter, GraphQL, `weir lanes show`, bulk cancel's
status match and the metrics all say Running from the moment the call is handed over."""

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import weir_and_app
from tests.integration.harness import AppServer, WeirServer, wait_until
from tests.support.backends import BACKENDS

pytestmark = pytest.mark.integration
APP = "tests.integration.apps.weir_running"


@pytest.fixture(scope="module", params=BACKENDS)
def servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WeirServer, AppServer, Path]]:
    tmp = tmp_path_factory.mktemp(f"running-{request.param}")
    with weir_and_app(tmp, str(request.param), APP, "running") as (weir, app):
        yield weir, app, tmp


def _began(app: AppServer, run_id: str, step: str | None = None) -> list[dict[str, Any]]:
    return [
        e
        for e in app.entries("begin")
        if e["run"] == run_id and (step is None or e["step"] == step)
    ]


def _gql(weir: WeirServer, query: str, **variables: Any) -> dict[str, Any]:
    body = {"query": query, "variables": variables}
    answer = httpx.post(f"{weir.url}/v0/gql", json=body, timeout=10).json()
    assert "errors" not in answer, answer
    data: dict[str, Any] = answer["data"]
    return data


def _listed(weir: WeirServer, *statuses: str) -> list[str]:
    params = [("function", "running-held"), *(("status", s) for s in statuses)]
    found = httpx.get(f"{weir.url}/ui/api/runs", params=params, timeout=10).json()
    return [r["id"] for r in found["runs"]]


def _matched(weir: WeirServer, status: str) -> int:
    body = {"function_id": "running-held", "status": [status], "dry_run": True}
    answer = httpx.post(f"{weir.url}/v1/runs/cancel", json=body, timeout=10)
    assert answer.status_code == 200, answer.text
    return int(answer.json()["data"]["matched"])


def _gauge(weir: WeirServer, status: str) -> float:
    text = httpx.get(f"{weir.url}/metrics", timeout=10).text
    line = f'weir_runs_unfinished{{status="{status}"}}'
    found = [row.split()[-1] for row in text.splitlines() if row.startswith(line)]
    return float(found[0]) if found else 0.0


def test_a_run_whose_first_call_is_in_the_app_is_running_to_every_reader(
    servers: tuple[WeirServer, AppServer, Path],
) -> None:
    weir, app, tmp = servers
    release = tmp / f"release-{uuid.uuid4().hex[:8]}"
    key = f"k-{uuid.uuid4().hex[:8]}"
    run_id = weir.runs(weir.send("t/held", {"k": key, "release": str(release)}))[0]["run_id"]
    wait_until(lambda: _began(app, run_id))  # its first call is in the app, not answered
    try:
        rest = weir.run(run_id)
        assert rest["status"] == "Running"
        assert rest["state"]["kind"] == "executing"
        started = rest["run_started_at"]
        assert isinstance(started, int) and rest["queued_at"] <= started <= time.time() * 1000

        # the UI's list and its Status filter (what the runs page renders)
        assert run_id in _listed(weir, "RUNNING")
        assert run_id not in _listed(weir, "QUEUED")
        assert run_id in _listed(weir, "QUEUED", "RUNNING")
        [shown] = [r for r in _page(weir) if r["id"] == run_id]
        assert shown["status"] == "RUNNING"

        query = "query($id: String!) { run(runID: $id) { status startedAt } }"
        gql = _gql(weir, query, id=run_id)["run"]
        assert gql["status"] == "RUNNING" and gql["startedAt"] is not None

        [lane] = httpx.get(
            f"{weir.url}/v1/lanes", params={"function": "running-held", "key": key}, timeout=10
        ).json()["data"]
        shown_lane = subprocess.run(
            [sys.executable, "-m", "weir", "lanes", "show", lane["lane"], "--base-url", weir.url],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert shown_lane.returncode == 0, shown_lane.stderr
        assert f"held by run {run_id} (RUNNING)" in shown_lane.stdout

        assert _matched(weir, "Running") == 1  # bulk cancel would cancel it as running
        assert _matched(weir, "Queued") == 0
        assert _gauge(weir, "running") == 1.0
        assert _gauge(weir, "queued") == 0.0
    finally:
        release.touch()
    ended = wait_until(lambda: weir.run(run_id) if weir.run(run_id)["ended_at"] else None)
    assert ended["status"] == "Completed"
    assert ended["run_started_at"] == started  # the start the readers showed is the one kept


def _page(weir: WeirServer) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = httpx.get(
        f"{weir.url}/ui/api/runs", params={"function": "running-held"}, timeout=10
    ).json()["runs"]
    return found


def _in_flight(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [h for h in run["history"] if h["kind"] == "call" and h["ended_at"] is None]


TRACE = (
    "query($id: String!) { runTrace(runID: $id) { childrenSpans { name status stepID "
    "startedAt endedAt } } }"
)


def _running_spans(weir: WeirServer, run_id: str) -> list[dict[str, Any]]:
    spans = _gql(weir, TRACE, id=run_id)["runTrace"]["childrenSpans"]
    return [s for s in spans if s["status"] == "RUNNING"]


def test_a_later_call_in_the_app_is_a_row_of_the_history_and_a_span_of_the_trace(
    servers: tuple[WeirServer, AppServer, Path],
) -> None:
    """Issue 36 item 2: a step after the first, in the app, is in the run's history (REST) and
    trace (GraphQL) as it runs: named as planned, or, when the SDK finds it as it runs, said
    to be finding the next step, since its claim."""
    weir, app, tmp = servers
    release = tmp / f"release-{uuid.uuid4().hex[:8]}"
    alone = weir.runs(weir.send("t/later", {"release": str(release)}))[0]["run_id"]
    both = weir.runs(weir.send("t/later", {"release": str(release), "parallel": True}))
    planned = both[0]["run_id"]
    wait_until(lambda: _began(app, alone, "second") and len(_began(app, planned)) == 2)
    try:
        rest = weir.run(alone)
        [call] = _in_flight(rest)
        assert (call["status"], call["step_id"], call["name"]) == ("RUNNING", "step", "")
        assert rest["state"]["words"].startswith("executing the function, finding its next step")
        assert rest["state"]["since"] is not None
        [quick] = rest["steps"]
        assert quick["name"] == "first" and quick["at"] <= call["started_at"]
        [span] = _running_spans(weir, alone)
        assert (span["name"], span["stepID"], span["endedAt"]) == (
            "finding its next step",
            None,
            None,
        )

        rest = weir.run(planned)
        ops = [o for h in rest["history"] if h["ended_at"] for o in h["detail"].get("ops", [])]
        names = {o["id"]: o["name"] for o in ops if o["op"] == "StepPlanned"}
        assert sorted(names.values()) == ["left", "right"]
        assert {h["step_id"]: h["name"] for h in _in_flight(rest)} == names
        assert {s["stepID"]: s["name"] for s in _running_spans(weir, planned)} == names
    finally:
        release.touch()
    for run_id in (alone, planned):
        ended = wait_until(lambda r=run_id: weir.run(r) if weir.run(r)["ended_at"] else None)
        assert ended["status"] == "Completed"
        assert _in_flight(ended) == [] and _running_spans(weir, run_id) == []
