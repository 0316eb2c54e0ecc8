"""Signals with a real Weir process and a real weir.sdk app on loopback, on SQLite and
PostgreSQL (issue 39 items 1 and 2): POST /v1/signals resumes the one run waiting on the name
with the data and says which run received it; none waiting is a 404; a second waiter's step
fails with SignalConflictError; of two concurrent deliveries exactly one lands; a timeout
resumes with None; the sender may wait for the run's reply, and a restart between delivery
and reply loses neither; the waiting step's `if` rejects data before it is recorded; bad
input gets a clear 4xx."""

import re
import threading
import time
from collections.abc import Iterator
from itertools import count
from typing import Any

import httpx
import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until
from tests.support.backends import BACKENDS, empty_database

pytestmark = pytest.mark.integration

APP = "signals"
_names = count()


@pytest.fixture(scope="module", params=BACKENDS)
def servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WeirServer, AppServer]]:
    tmp = tmp_path_factory.mktemp(f"signals-{request.param}")
    with empty_database(request.param, tmp) as url:
        weir = WeirServer(tmp, database_url=url)
        app = AppServer(tmp, "tests.integration.apps.weir_signals", APP, weir.url)
        try:
            weir.start()
            app.start()
            app.sync()
            yield weir, app
        finally:
            app.stop()
            weir.stop()


def fresh(prefix: str = "order") -> str:
    return f"{prefix}/{time.monotonic_ns()}-{next(_names)}"


def waiting_run(weir: WeirServer, signal: str, **data: Any) -> str:
    """Start `approve` on `signal`; its run id once it waits for the signal."""
    event_id = weir.send("t/approve", {"signal": signal, **data})
    run_id: str = wait_until(lambda: (weir.runs(event_id) or [{}])[0].get("run_id"))
    wait_until(lambda: weir.run(run_id)["state"]["kind"] == "waiting_for_signal")
    return run_id


def post(weir: WeirServer, body: Any, wait: str | None = None, **params: str) -> httpx.Response:
    query = params | ({"wait": wait} if wait else {})
    return httpx.post(f"{weir.url}/v1/signals", params=query, timeout=90, json=body)


def ended(weir: WeirServer, run_id: str, timeout: float = 20) -> dict[str, Any]:
    done: dict[str, Any] = wait_until(
        lambda: (r := weir.run(run_id))["status"] in ("Completed", "Failed", "Cancelled") and r,
        timeout,
    )
    return done


def test_delivery_resumes_the_waiting_run_with_the_data_and_names_it(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    run_id = waiting_run(weir, signal)
    state = weir.run(run_id)["state"]
    assert re.search(rf"^waiting for signal `{re.escape(signal)}` since \d{{4}}-", state["words"])
    assert state["details"] == {"signal": signal}, state
    resp = post(weir, {"signal": signal, "data": {"by": "ana"}})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["run_id"] == run_id and body["data"]["run_id"] == run_id
    run = ended(weir, run_id)
    assert run["status"] == "Completed", run
    assert run["output"]["signal"] == signal and run["output"]["data"] == {"by": "ana"}


def test_a_signal_no_run_waits_for_is_a_404_and_is_not_kept(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    resp = post(weir, {"signal": signal, "data": 1})
    assert resp.status_code == 404, resp.text
    assert f"no run is waiting for signal {signal!r}" in resp.json()["error"]
    run_id = waiting_run(weir, signal)  # a wait opened later does not get the earlier signal
    assert weir.run(run_id)["state"]["kind"] == "waiting_for_signal"
    assert post(weir, {"signal": signal, "data": 2}).status_code == 200
    assert ended(weir, run_id)["output"]["data"] == 2


def test_a_second_waiter_on_a_held_signal_fails_its_step_with_a_named_error(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    first = waiting_run(weir, signal)
    event_id = weir.send("t/approve", {"signal": signal})
    second = weir.finished_run(event_id)
    assert second["status"] == "Completed", second
    assert second["output"]["conflict"] == "SignalConflictError", second
    assert first in second["output"]["message"]
    resp = post(weir, {"signal": signal, "data": "x"})
    assert resp.status_code == 200 and resp.json()["run_id"] == first


def send_at_once(
    weir: WeirServer, signal: str, n: int, start: threading.Barrier, out: list[httpx.Response]
) -> None:
    start.wait()
    out.append(post(weir, {"signal": signal, "data": n}))


def test_two_concurrent_deliveries_for_one_waiter_deliver_exactly_one(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    for _ in range(3):
        signal = fresh()
        run_id = waiting_run(weir, signal)
        start = threading.Barrier(2)
        answers: list[httpx.Response] = []

        threads = [
            threading.Thread(target=send_at_once, args=(weir, signal, n, start, answers))
            for n in (1, 2)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(a.status_code for a in answers) == [200, 404], [a.text for a in answers]
        [won] = [a for a in answers if a.status_code == 200]
        assert won.json()["run_id"] == run_id
        run = ended(weir, run_id)
        assert run["output"]["data"] in (1, 2)


def test_a_timeout_resumes_the_run_with_none_and_frees_the_signal(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    # not waiting_run: under load its poll may come after this short wait has timed out
    event_id = weir.send("t/approve", {"signal": signal, "timeout": "1s"})
    run_id: str = wait_until(lambda: (weir.runs(event_id) or [{}])[0].get("run_id"))
    assert ended(weir, run_id)["output"] == {"timed_out": True}
    assert post(weir, {"signal": signal}).status_code == 404


def test_the_sender_can_wait_for_the_runs_reply(servers: tuple[WeirServer, AppServer]) -> None:
    weir, _ = servers
    signal = fresh()
    run_id = waiting_run(weir, signal)
    resp = post(weir, {"signal": signal, "data": "bo"}, wait="30s")
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["run_id"] == run_id
    assert data["answered"] is True, data
    assert data["answer"] == {"approved": True, "by": "bo"}
    again = httpx.get(f"{weir.url}/v1/signals/deliveries/{data['delivery_id']}").json()["data"]
    assert again["answer"] == data["answer"]


def test_a_bounded_wait_answers_unanswered_when_the_reply_comes_later(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    waiting_run(weir, signal, pause="3s")
    resp = post(weir, {"signal": signal, "data": 1}, wait="200ms")
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert data["answered"] is False and data["answer"] is None
    url = f"{weir.url}/v1/signals/deliveries/{data['delivery_id']}"
    later = httpx.get(url, params={"wait": "20s"}, timeout=30).json()["data"]
    assert later["answered"] is True and later["answer"]["by"] == 1


def test_the_waiting_steps_condition_rejects_a_signal_before_it_is_recorded(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    run_id = waiting_run(weir, signal, **{"if": "async.data.amount > 10"})
    resp = post(weir, {"signal": signal, "data": {"amount": 3}})
    assert resp.status_code == 422, resp.text
    assert run_id in resp.json()["error"] and "async.data.amount > 10" in resp.json()["error"]
    assert weir.run(run_id)["state"]["kind"] == "waiting_for_signal"  # still open
    assert post(weir, {"signal": signal, "data": {"amount": 30}}).status_code == 200
    assert ended(weir, run_id)["output"]["data"] == {"amount": 30}


def test_a_restart_between_delivery_and_reply_loses_neither(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    run_id = waiting_run(weir, signal, pause="2s")
    resp = post(weir, {"signal": signal, "data": "restart"})
    assert resp.status_code == 200, resp.text
    delivery = resp.json()["data"]["delivery_id"]
    wait_until(lambda: weir.run(run_id)["state"]["kind"] == "sleeping")
    weir.kill()  # the run sleeps between the delivery and its reply
    weir.start()
    url = f"{weir.url}/v1/signals/deliveries/{delivery}"
    later = httpx.get(url, params={"wait": "30s"}, timeout=40).json()["data"]
    assert later["answered"] is True, later
    assert later["answer"] == {"approved": True, "by": "restart"}
    assert ended(weir, run_id)["output"]["data"] == "restart"


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"data": {}}, "'signal' must be a non-empty string"),
        ({"signal": 5}, "'signal' must be a non-empty string"),
        ({"signal": ""}, "'signal' must be a non-empty string"),
        ({"signal": "x" * 600}, "at most 512 printable characters"),
        ({"signal": "a", "extra": 1}, "unknown field(s) ['extra']"),
        ([1, 2], "the body must be a JSON object"),
        ({"signal": "a", "data": {"n": 10**30}}, "data.n is 1000000000000000000000000000000"),
    ],
)
def test_bad_signals_get_a_clear_400(
    servers: tuple[WeirServer, AppServer], body: Any, needle: str
) -> None:
    weir, _ = servers
    resp = post(weir, body)
    assert resp.status_code == 400, resp.text
    assert needle in resp.json()["error"]


def test_bad_json_oversized_data_and_a_long_wait_get_a_clear_4xx(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    url = f"{weir.url}/v1/signals"
    resp = httpx.post(url, content=b"{not json", headers={"content-type": "application/json"})
    assert resp.status_code == 400 and "not valid JSON" in resp.json()["error"]
    big = httpx.post(url, json={"signal": "a", "data": "x" * (600 * 1024)})
    assert big.status_code == 413, big.text
    long = post(weir, {"signal": "a"}, wait="5m")
    assert long.status_code == 400 and "longer than 60s" in long.json()["error"]
    bad = post(weir, {"signal": "a"}, wait="soon")
    assert bad.status_code == 400 and bad.json()["error"].startswith("wait:")


def test_replace_takes_the_signal_over_and_the_first_waiter_resumes_with_none(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    first = waiting_run(weir, signal)
    second = waiting_run(weir, signal, conflict="replace")
    assert ended(weir, first)["output"] == {"timed_out": True}
    resp = post(weir, {"signal": signal, "data": "late"})
    assert resp.status_code == 200 and resp.json()["run_id"] == second
    assert ended(weir, second)["output"]["data"] == "late"


def test_cancelling_a_waiting_run_frees_its_signal(servers: tuple[WeirServer, AppServer]) -> None:
    weir, _ = servers
    signal = fresh()
    run_id = waiting_run(weir, signal)
    assert httpx.delete(f"{weir.url}/v1/runs/{run_id}").status_code == 200
    assert ended(weir, run_id)["status"] == "Cancelled"
    assert post(weir, {"signal": signal}).status_code == 404
    again = waiting_run(weir, signal)  # no conflict: the cancelled run's wait is gone
    assert post(weir, {"signal": signal, "data": 7}).json()["run_id"] == again


def test_the_run_page_says_what_signal_the_run_waits_for(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    run_id = waiting_run(weir, signal)
    page = httpx.get(f"{weir.url}/runs/{run_id}")
    assert page.status_code == 200, page.text[:300]
    assert f"waiting for signal `{signal}` since" in page.text
    assert f"Wait for signal {signal}" in page.text  # the timeline's bar
    post(weir, {"signal": signal})


def test_a_sender_may_wait_a_bounded_time_for_a_run_to_start_waiting(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    early: list[httpx.Response] = []
    sender = threading.Thread(
        target=lambda: early.append(post(weir, {"signal": signal, "data": 9}, wait_for_run="20s"))
    )
    sender.start()
    time.sleep(0.3)  # the signal is posted before any run waits on it
    event_id = weir.send("t/approve", {"signal": signal})
    sender.join(30)
    [resp] = early
    assert resp.status_code == 200, resp.text
    run = weir.finished_run(event_id)
    assert resp.json()["run_id"] == run["run_id"] and run["output"]["data"] == 9
    # bounded: with no run to come, the answer is the 404 once the time has passed
    started = time.monotonic()
    late = post(weir, {"signal": fresh()}, wait_for_run="300ms")
    assert late.status_code == 404 and time.monotonic() - started >= 0.3
    too_long = post(weir, {"signal": "a"}, wait_for_run="2m")
    assert too_long.status_code == 400 and too_long.json()["error"].startswith("wait_for_run:")


GQL_RUN = """query Q($id: String!) {
  run(runID: $id) { trace { childrenSpans { name status stepOp } } }
}"""


def test_graphql_shows_the_open_wait_as_a_wait_for_signal_span(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    signal = fresh()
    run_id = waiting_run(weir, signal)
    query = {"query": GQL_RUN, "variables": {"id": run_id}}
    answer = httpx.post(f"{weir.url}/v0/gql", json=query).json()
    spans = answer["data"]["run"]["trace"]["childrenSpans"]
    assert ("approval", "WAITING", "WAIT_FOR_SIGNAL") in [
        (s["name"], s["status"], s["stepOp"]) for s in spans
    ], spans
    post(weir, {"signal": signal})
    done = ended(weir, run_id)
    answer = httpx.post(f"{weir.url}/v0/gql", json=query).json()
    ops = [s["stepOp"] for s in answer["data"]["run"]["trace"]["childrenSpans"]]
    assert "WAIT_FOR_SIGNAL" in ops, (ops, done)
