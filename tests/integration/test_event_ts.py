"""A future event `ts` schedules the run (as in Inngest): the run waits, saying so, and starts
at the event's ts; a ts in the past starts it at once; one further ahead than ingest allows is
refused with a 400 naming the bound."""

import time
from datetime import datetime

import httpx
import pytest

from tests.integration.harness import SDK_AND_BACKEND, AppServer, WeirServer, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.parametrize(("sdk", "backend"), SDK_AND_BACKEND[1:], scope="module"),
]

AHEAD_MS = 4_000


def test_a_future_ts_schedules_the_run_at_that_time(
    weir_server: WeirServer, app: AppServer
) -> None:
    ts = int(time.time() * 1000) + AHEAD_MS
    event_id = weir_server.send("t/steps", {"x": 1}, ts=ts)
    [queued] = wait_until(lambda: weir_server.runs(event_id))
    run = weir_server.run(queued["run_id"])
    assert run["status"] == "Queued" and run["run_started_at"] is None, run
    assert run["waiting"]["gate"] == "scheduled", run
    until = datetime.fromisoformat(run["waiting"]["until"]).timestamp() * 1000
    assert round(until) == ts, run["waiting"]
    assert "scheduled: starts at its event's ts" in run["state"]["words"], run["state"]
    page = httpx.get(f"{weir_server.url}/runs/{run['run_id']}")  # the run's page says so too
    assert "scheduled: starts at its event&#39;s ts" in page.text, page.text[:2000]
    done = weir_server.finished_run(event_id, timeout=AHEAD_MS / 1000 + 30)
    assert done["status"] == "Completed"
    assert done["run_started_at"] >= ts, (done["run_started_at"], ts)
    # a ts in the past (or now) starts the run at once, as before
    past = weir_server.send("t/steps", {"x": 2}, ts=int(time.time() * 1000) - 60_000)
    ran = weir_server.finished_run(past, timeout=AHEAD_MS / 1000)  # no wait for a past ts
    assert ran["status"] == "Completed", ran


def test_a_ts_more_than_366_days_ahead_is_refused(weir_server: WeirServer, app: AppServer) -> None:
    far = int(time.time() * 1000) + 367 * 24 * 3_600_000
    resp = httpx.post(f"{weir_server.url}/e/test", json={"name": "t/steps", "ts": far})
    assert resp.status_code == 400
    assert "more than 366 days ahead" in resp.json()["error"], resp.text
