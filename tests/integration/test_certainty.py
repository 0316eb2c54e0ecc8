"""Certainty under concurrency: many runs sharing keys, parallel steps and injected failures;
then, from the store's own records, no concurrency limit was ever exceeded and the rate limit
admitted exactly the events the GCRA rule admits."""

import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest
from weir.platform.gates.rate_limit import RateLimitConfig, admit_event

from tests.integration.audit import max_overlap
from tests.integration.harness import AppServer, WeirServer, wait_until

pytestmark = pytest.mark.integration
KEYS = "abcd"


def test_no_limit_exceeded_under_load_and_failures(tmp_path: Path) -> None:
    weir = WeirServer(tmp_path)
    app = AppServer(tmp_path, "tests.integration.apps.weir_stress", "stress", weir.url)
    try:  # stopped whatever fails, a start included: no server outlives its test
        weir.start()
        app.start()
        app.sync()
        for burst in range(6):  # 12 events per key in each burst; 8 per key may start at once
            weir.send_many(
                [{"name": "t/stress", "data": {"k": KEYS[i % 4], "b": burst}} for i in range(48)]
            )
        wait_until(lambda: _all_runs_ended(weir.db), timeout=120, every=0.5)
    finally:
        app.stop()
        weir.stop()
    with sqlite3.connect(weir.db) as conn:
        _assert_concurrency(conn)
        _assert_rate_limit(conn)
        results = set(conn.execute("SELECT status, output FROM runs").fetchall())
        retried = conn.execute("SELECT count(*) FROM history WHERE attempt > 0").fetchone()[0]
    assert results == {("COMPLETED", "1")}  # every run got through its injected failures
    assert retried > 0


def _all_runs_ended(db: Path) -> bool:
    with sqlite3.connect(db) as conn:
        total, open_ = conn.execute(
            "SELECT count(*), sum(status NOT IN ('COMPLETED','FAILED','CANCELLED')) FROM runs"
        ).fetchone()
    return bool(total) and not open_


def _spans(conn: sqlite3.Connection) -> dict[str, list[tuple[int, int]]]:
    rows = conn.execute(
        "SELECT json_extract(e.payload, '$.data.k'), h.started_at, h.ended_at FROM history h "
        "JOIN runs r ON r.id = h.run_id JOIN events e ON e.id = json_extract(r.event_ids, '$[0]') "
        "WHERE h.kind = 'call'"
    ).fetchall()
    by_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for key, start, end in rows:
        by_key[key].append((start, end))
    return by_key


def _assert_concurrency(conn: sqlite3.Connection) -> None:
    by_key = _spans(conn)
    assert set(by_key) == set(KEYS)
    for key, spans in by_key.items():
        assert max_overlap(("", *span) for span in spans) <= 3, (
            f"key {key} ran more than 3 calls at once"
        )
    everything = max_overlap(("", *span) for spans in by_key.values() for span in spans)
    assert everything <= 5, "the function ran more than 5 calls at once"
    assert everything >= 4  # the load did press against the limits


def _assert_rate_limit(conn: sqlite3.Connection) -> None:
    rows = conn.execute(
        "SELECT e.id, json_extract(e.payload, '$.data.k'), e.received_at, "
        "EXISTS(SELECT 1 FROM event_runs er WHERE er.event_id = e.id) FROM events e "
        "WHERE e.name = 't/stress' ORDER BY e.received_at, e.id"
    ).fetchall()
    config = RateLimitConfig(period_ms=1000, limit=8)
    state: dict[str, object] = {}
    skipped = 0
    for _event_id, key, received, started in rows:
        decision = admit_event(config, state.get(key), received)  # type: ignore[arg-type]
        state[key] = decision.state
        assert decision.admitted == bool(started), f"event of key {key} at {received}"
        skipped += not started
    assert skipped > 0  # the bursts did exceed the budget
