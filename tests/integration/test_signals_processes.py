"""Signals across two Weir processes on one PostgreSQL (issue 39): a signal posted to either
process reaches the run, whichever drives it; of two posts at once, one to each process,
exactly one delivers; of two runs opening a wait on one name at once, one holds it and the
other's step fails with SignalConflictError; the sender waiting on one process sees the reply
recorded by the other."""

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.harness import AppServer, Process, WeirServer, wait_until
from tests.support.postgres import fresh_schema

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[WeirServer]]:
    tmp: Path = tmp_path_factory.mktemp("signals-processes")
    with fresh_schema() as url:
        weirs = [WeirServer(tmp, database_url=url, name=f"weir{i}") for i in range(2)]
        app = AppServer(tmp, "tests.integration.apps.weir_signals", "signals", weirs[0].url)
        try:
            for weir in weirs:
                Process.start(weir)
            for weir in weirs:
                wait_until(lambda w=weir: httpx.get(f"{w.url}/health").status_code == 200, 60)
            app.start()
            app.sync()
            yield weirs
        finally:
            app.stop()
            for weir in weirs:
                weir.stop()


def fresh() -> str:
    return f"order/{time.monotonic_ns()}"


def run_of(weir: WeirServer, event_id: str) -> str:
    run_id: str = wait_until(lambda: (weir.runs(event_id) or [{}])[0].get("run_id"), 30)
    return run_id


def state(weir: WeirServer, run_id: str) -> dict[str, Any]:
    found: dict[str, Any] = weir.run(run_id)
    return found


def post(weir: WeirServer, signal: str, data: Any, wait: str | None = None) -> httpx.Response:
    params = {"wait": wait} if wait else None
    body = {"signal": signal, "data": data}
    return httpx.post(f"{weir.url}/v1/signals", json=body, params=params, timeout=60)


def at_once(calls: list[Any]) -> list[Any]:
    start = threading.Barrier(len(calls))
    out: list[Any] = [None] * len(calls)

    def go(i: int) -> None:
        start.wait()
        out[i] = calls[i]()

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def sender(weir: WeirServer, signal: str, data: Any) -> Any:
    return lambda: post(weir, signal, data)


def starter(weir: WeirServer, signal: str) -> Any:
    return lambda: weir.send("t/approve", {"signal": signal})


def one_waits(weir: WeirServer, runs: list[str]) -> list[dict[str, Any]] | None:
    seen = [state(weir, r) for r in runs]
    kinds = sorted(s["status"] if s["status"] == "Completed" else s["state"]["kind"] for s in seen)
    return seen if kinds == ["Completed", "waiting_for_signal"] else None


@pytest.mark.timeout(180)
def test_one_delivery_of_two_posted_at_once_to_two_processes(servers: list[WeirServer]) -> None:
    a, b = servers
    for _ in range(3):
        signal = fresh()
        run_id = run_of(a, a.send("t/approve", {"signal": signal}))
        wait_until(lambda r=run_id: state(b, r)["state"]["kind"] == "waiting_for_signal", 30)
        answers = at_once([sender(a, signal, "a"), sender(b, signal, "b")])
        assert sorted(r.status_code for r in answers) == [200, 404], [r.text for r in answers]
        done = wait_until(lambda r=run_id: state(a, r)["status"] == "Completed" and state(a, r))
        [won] = [n for n, r in zip("ab", answers, strict=True) if r.status_code == 200]
        assert done["output"]["data"] == won


@pytest.mark.timeout(180)
def test_two_runs_opening_one_signal_at_once_one_holds_it(servers: list[WeirServer]) -> None:
    a, b = servers
    for _ in range(3):
        signal = fresh()
        ids = at_once([starter(a, signal), starter(b, signal)])
        runs = [run_of(a, e) for e in ids]
        seen = wait_until(lambda r=runs: one_waits(a, r), 30)
        [lost] = [s for s in seen if s["status"] == "Completed"]
        [held] = [s for s in seen if s["status"] != "Completed"]
        assert lost["output"]["conflict"] == "SignalConflictError", lost
        resp = post(b, signal, "x", wait="20s")
        assert resp.status_code == 200 and resp.json()["run_id"] == held["run_id"]
        assert resp.json()["data"]["answer"] == {"approved": True, "by": "x"}
