"""Three Weir processes on one PostgreSQL, one of them SIGKILLed under load.

Keyed concurrency, a keyed throttle and a keyed rate limit are loaded through all three
processes; one is killed midway. Then, from the store's own records (runs, steps, history call
spans, event outcomes) and the app's journal of step executions: every run completed, no step
ran again after its result was committed, and no limit was exceeded at any moment.
"""

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.audit import gcra_excess, max_overlap, throttle_excess, window_peak
from tests.integration.harness import AppServer, Process, WeirServer, store_rows, wait_until
from tests.support.postgres import fresh_schema

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

KEYS = ("a", "b", "c")
CONCURRENCY = 2  # weir_multi.keyed: per event.data.k
THROTTLE_PERIOD, THROTTLE_LIMIT, THROTTLE_BURST = 1000, 5, 1  # weir_multi.throttled
RATE_T, RATE_LIMIT = 250, 4  # weir_multi.limited: 4 per 1s
JITTER_MS = 100  # a start's claim may lag its throttle slot by this much under load
LEASE_S = "2"  # a dead process's items pass to the others after this


@pytest.mark.timeout(300)
def test_three_processes_keep_every_limit_through_a_sigkill(tmp_path: Path) -> None:
    with fresh_schema() as url:
        servers = [
            WeirServer(tmp_path, "--lease", LEASE_S, database_url=url, name=f"weir{i}")
            for i in range(3)
        ]
        app = AppServer(tmp_path, "tests.integration.apps.weir_multi", "multi", servers[0].url)
        try:
            sent = _run_load(servers, app)
            _wait_all_ended(url, sent)
            _check(url, app, sent)
        finally:
            app.stop()
            for server in servers:
                server.stop()


def _run_load(servers: list[WeirServer], app: AppServer) -> dict[str, int]:
    for server in servers:  # all at once: one migrates, the others wait on its lock
        Process.start(server)
    for server in servers:
        wait_until(lambda s=server: httpx.get(f"{s.url}/health").status_code == 200, 60)
    app.start()
    app.sync()
    for server in servers:  # each process has loaded the synced functions
        wait_until(lambda s=server: s.runs(s.send("m/probe")), 15, every=0.3)
    sent: dict[str, int] = defaultdict(int)
    for wave in range(6):
        live = servers if wave < 3 else servers[:2]
        for n, server in enumerate(live):
            _send_wave(server, sent, wave * 10 + n)
        if wave == 2:
            wait_until(lambda: len(app.entries("begin")) >= 10, 30)
            servers[2].kill()  # mid-run: calls in flight, items leased, slots held
        time.sleep(0.4)
    return dict(sent)


def _send_wave(server: WeirServer, sent: dict[str, int], seed: int) -> None:
    events = [{"name": "m/keyed", "data": {"k": KEYS[(seed + i) % 3]}} for i in range(4)]
    events += [{"name": "m/throttled", "data": {"k": KEYS[(seed + i) % 2]}} for i in range(2)]
    # One request is admitted at one instant: six of a key there always overrun a limit of 4.
    events += [{"name": "m/limited", "data": {"k": KEYS[seed % 2]}} for _ in range(6)]
    resp = httpx.post(f"{server.url}/e/test", json=events, timeout=30)
    assert resp.status_code == 200, resp.text
    for event in events:
        sent[str(event["name"])] += 1


RUNS = """
SELECT r.id, f.slug, r.status, r.created_at, e.payload
FROM runs r JOIN functions f ON f.id = r.function_id
JOIN event_runs er ON er.run_id = r.id JOIN events e ON e.id = er.event_id
WHERE f.slug LIKE '%-keyed' OR f.slug LIKE '%-throttled' OR f.slug LIKE '%-limited'
"""


def _wait_all_ended(url: str, sent: dict[str, int]) -> None:
    expected = sent["m/keyed"] + sent["m/throttled"]

    def ended() -> bool:
        runs = store_rows(url, RUNS)
        started = [r for r in runs if not r.slug.endswith("-limited")]
        return len(started) >= expected and all(r.status in ENDED for r in runs)

    wait_until(ended, 120, every=0.5)


ENDED = ("COMPLETED", "FAILED", "CANCELLED", "SKIPPED")


def _check(url: str, app: AppServer, sent: dict[str, int]) -> None:
    runs = {
        r.id: (r.slug.rsplit("-", 1)[-1], r, json.loads(r.payload)["data"]["k"])
        for r in store_rows(url, RUNS)
    }
    assert {r.status for _, r, _ in runs.values()} == {"COMPLETED"}
    by_fn = defaultdict(list)
    for run_id, (fn, row, key) in runs.items():
        by_fn[fn].append((run_id, row, key))
    assert len(by_fn["keyed"]) == sent["m/keyed"]
    assert len(by_fn["throttled"]) == sent["m/throttled"]
    _check_no_rerun_after_commit(url, app)
    _check_concurrency(url, app, {rid: key for rid, _, key in by_fn["keyed"]})
    _check_throttle(url, app, by_fn["throttled"])
    _check_rate_limit(url, by_fn["limited"], sent["m/limited"])


def _check_no_rerun_after_commit(url: str, app: AppServer) -> None:
    committed = {
        (r.run_id, r.name): r.at
        for r in store_rows(url, "SELECT run_id, name, at FROM steps WHERE op = 'StepRun'")
    }
    begins = app.entries("begin")
    assert {(e["run"], e["step"]) for e in begins} == set(committed)
    for e in begins:
        at = committed[(e["run"], e["step"])]
        assert e["at"] * 1000 <= at, f"step {e['step']} of {e['run']} ran after its commit"


def _check_concurrency(url: str, app: AppServer, key_of: dict[str, str]) -> None:
    calls = store_rows(url, "SELECT run_id, started_at, ended_at FROM history WHERE kind = 'call'")
    spans = [(key_of[c.run_id], c.started_at, c.ended_at) for c in calls if c.run_id in key_of]
    assert spans, "the store recorded the keyed calls"
    assert max_overlap(spans) <= CONCURRENCY, "store call spans exceed the concurrency limit"
    journal = _journal_spans(app, key_of)  # also the calls the killed process never recorded
    assert max_overlap(journal) <= CONCURRENCY, "step executions exceed the concurrency limit"


def _journal_spans(app: AppServer, key_of: dict[str, str]) -> list[tuple[str, float, float]]:
    ends = {(e["run"], e["step"], i): e["at"] for i, e in enumerate(app.entries("end"))}
    done: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (run, step, _), at in sorted(ends.items(), key=lambda kv: kv[1]):
        done[(run, step)].append(at)
    spans = []
    for e in app.entries("begin"):
        if e["run"] not in key_of:
            continue
        later = [at for at in done[(e["run"], e["step"])] if at >= e["at"]]
        end = later[0] if later else e["at"] + 0.08  # cut short when its caller died
        spans.append((key_of[e["run"]], e["at"] * 1000, end * 1000))
    return spans


def _check_throttle(url: str, app: AppServer, runs: list[tuple[str, Any, str]]) -> None:
    first: dict[str, float] = {}
    for c in store_rows(url, "SELECT run_id, started_at FROM history WHERE kind = 'call'"):
        first[c.run_id] = min(first.get(c.run_id, c.started_at), c.started_at)
    for e in app.entries("begin"):  # a start the killed process made and never recorded
        if e["run"] in first:
            first[e["run"]] = min(first[e["run"]], e["at"] * 1000)
    starts: dict[str, list[float]] = defaultdict(list)
    for run_id, _, key in runs:
        starts[key].append(first[run_id])
    allowed = THROTTLE_LIMIT + THROTTLE_BURST
    for key, times in starts.items():
        excess = throttle_excess(times, THROTTLE_PERIOD, THROTTLE_LIMIT, THROTTLE_BURST, JITTER_MS)
        assert excess == 0, f"throttle {key}: {excess} starts over the rule's GCRA"
        peak = window_peak(times, THROTTLE_PERIOD - JITTER_MS)
        assert peak <= allowed, f"throttle {key}: {peak} starts in one period ({allowed} allowed)"


def _check_rate_limit(url: str, runs: list[tuple[str, Any, str]], sent: int) -> None:
    skipped = store_rows(
        url, "SELECT count(*) AS n FROM event_outcomes WHERE outcome = 'rate_limited'"
    )
    assert len(runs) + skipped[0].n == sent, "every limited event either ran or was skipped"
    assert skipped[0].n > 0, "the load went over the rate limit"
    admitted: dict[str, list[float]] = defaultdict(list)
    for _, row, key in runs:
        admitted[key].append(row.created_at)
    for key, times in admitted.items():
        excess = gcra_excess(times, RATE_T, 1, RATE_LIMIT - 1)
        assert excess == 0, f"rate limit {key}: {excess} admissions over the GCRA"
