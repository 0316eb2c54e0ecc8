"""FIFO lanes with three Weir processes on one PostgreSQL, producers sending to all of them at
once, and one process SIGKILLed midway. From the app's journal of step executions: no two runs
of a lane ever overlapped, each producer's runs of a lane ran in the order it sent them, and
every later run of a lane held a higher fence; from the store: every run completed."""

import itertools
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.harness import AppServer, Process, WeirServer, store_rows, wait_until
from tests.support.postgres import fresh_schema

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

LANES = ("a", "b", "c")
PRODUCERS = 3
WAVES = 4
LEASE_S = "2"  # a dead process's items pass to the others after this
RUNS = """
SELECT r.status FROM runs r JOIN functions f ON f.id = r.function_id WHERE f.slug LIKE '%-laned'
"""


@pytest.mark.timeout(300)
def test_lanes_hold_across_processes_producers_and_a_sigkill(tmp_path: Path) -> None:
    with fresh_schema() as url:
        servers = [
            WeirServer(tmp_path, "--lease", LEASE_S, database_url=url, name=f"weir{i}")
            for i in range(3)
        ]
        app = AppServer(tmp_path, "tests.integration.apps.weir_lanes", "plane", servers[0].url)
        try:
            sent = _run_load(servers, app)
            wait_until(lambda: _all_completed(url, len(sent)), 180, every=0.5)
            _check(app, sent)
        finally:
            app.stop()
            for server in servers:
                server.stop()


def _run_load(servers: list[WeirServer], app: AppServer) -> dict[int, tuple[int, int]]:
    for server in servers:  # all at once: one migrates, the others wait on its lock
        Process.start(server)
    for server in servers:
        wait_until(lambda s=server: httpx.get(f"{s.url}/health").status_code == 200, 60)
    app.start()
    app.sync()
    for server in servers:  # every process has loaded the synced function (a notification)
        known = f"{server.url}/v1/lanes?function=plane-laned"
        wait_until(lambda u=known: httpx.get(u).status_code == 200, 60)
    sent: dict[int, tuple[int, int]] = {}  # n -> (producer, its i-th event)
    counter = itertools.count()
    lock = threading.Lock()
    for wave in range(WAVES):
        live = servers if wave < 2 else servers[:2]
        threads = [
            threading.Thread(
                target=_produce, args=(live[p % len(live)], p, wave, sent, counter, lock)
            )
            for p in range(PRODUCERS)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        if wave == 1:
            wait_until(lambda: len(app.entries("lane")) >= 4, 30)
            servers[2].kill()  # mid-run: calls in flight, items leased
        time.sleep(0.3)
    return sent


def _produce(
    server: WeirServer,
    p: int,
    wave: int,
    sent: dict[int, tuple[int, int]],
    counter: Any,
    lock: threading.Lock,
) -> None:
    for r in range(2):  # two requests per wave, one after the other: their order is defined
        with lock:
            numbered = [(next(counter), wave * 10 + r * 3 + j) for j in range(3)]
        events = [
            {"name": "t/lane", "data": {"k": LANES[(n + p) % 3], "n": n, "p": p}}
            for n, _ in numbered
        ]
        resp = httpx.post(f"{server.url}/e/test", json=events, timeout=30)
        assert resp.status_code == 200, resp.text
        with lock:
            for n, i in numbered:
                sent[n] = (p, i)


def _all_completed(url: str, count: int) -> bool:
    runs = store_rows(url, RUNS)
    if len(runs) < count:
        return False
    assert {r.status for r in runs} <= {"QUEUED", "RUNNING", "COMPLETED"}, runs
    return all(r.status == "COMPLETED" for r in runs)


def _check(app: AppServer, sent: dict[int, tuple[int, int]]) -> None:
    spans: dict[str, list[float]] = {}
    info: dict[str, tuple[str, int, int]] = {}
    for e in app.entries("lane"):
        start, end = spans.get(e["run"], [e["at"], e["at"]])
        spans[e["run"]] = [min(start, e["at"]), max(end, e["at"])]
        if e["run"] in info:
            assert info[e["run"]][2] == e["fence"], f"run {e['run']} saw two fences"
        info[e["run"]] = (e["k"], e["n"], e["fence"])
    assert sorted(n for _, n, _ in info.values()) == sorted(sent), "every run ran"
    by_lane: dict[str, list[tuple[float, float, int, int]]] = defaultdict(list)
    for run, (lane, n, fence) in info.items():
        by_lane[lane].append((spans[run][0], spans[run][1], n, fence))
    for lane, runs in by_lane.items():
        runs.sort()
        for (_, end, n, fence), (start, _, later, later_fence) in itertools.pairwise(runs):
            assert start >= end, f"lane {lane}: run n={later} began before n={n} was over"
            assert later_fence > fence, f"lane {lane}: fence {later_fence} after {fence}"
        for p in range(PRODUCERS):
            order = [sent[n][1] for _, _, n, _ in runs if sent[n][0] == p]
            assert order == sorted(order), f"lane {lane}: producer {p}'s runs out of order"
