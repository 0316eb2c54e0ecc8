"""Retention against a real Weir and app: the sweep never takes the events an open batch holds
for its run, and a retention shorter than a declared window is refused."""

import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until

pytestmark = pytest.mark.integration
APP = "tests.integration.apps.weir_retention"
HOUR_MS = 3600 * 1000


def _age_every_event(db: Path, ms: int) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET received_at = received_at - ?", (ms,))


def _gone(weir: WeirServer, event_id: str) -> bool:
    return httpx.get(f"{weir.url}/v1/events/{event_id}").status_code == 404


def test_a_pending_batch_keeps_its_events_through_the_sweep(tmp_path: Path) -> None:
    weir = WeirServer(tmp_path, "--retention", "1h")
    app = AppServer(tmp_path, APP, "retention", weir.url)
    try:
        weir.start()
        app.start()
        app.sync()
        first = weir.send_many([{"name": "t/held", "data": {"n": n}} for n in range(2)])
        loose = weir.send("t/nobody", {})  # starts nothing: old, it is the sweep's to take
        weir.stop()
        _age_every_event(weir.db, 2 * HOUR_MS)  # two hours pass: older than the retention
        weir.start()  # the sweep runs at start
        wait_until(lambda: _gone(weir, loose), timeout=30)
        assert not any(_gone(weir, e) for e in first)
        last = weir.send("t/held", {"n": 2})  # fills the batch: its run starts
        run = weir.finished_run(last)
        assert (run["status"], run["output"]) == ("Completed", [0, 1, 2])
    finally:
        app.stop()
        weir.stop()


def test_a_sync_declaring_a_window_longer_than_the_retention_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEIR_TEST_BATCH", "2h")
    weir = WeirServer(tmp_path, "--retention", "1h")
    app = AppServer(tmp_path, APP, "retention", weir.url)
    try:
        weir.start()
        app.start()
        answer = httpx.put(app.url, timeout=30).json()
        assert not answer.get("ok")
        assert "option 'batchEvents.timeout': 2h is longer than" in str(answer)
    finally:
        app.stop()
        weir.stop()


def test_a_retention_of_seconds_is_refused_at_start() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "weir", "dev", "--retention", "1s"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "'1s' is shorter than the least retention, 1h" in done.stderr


def test_weir_refuses_to_start_with_a_retention_shorter_than_a_stored_window(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEIR_TEST_BATCH", "2h")
    weir = WeirServer(tmp_path, "--retention", "2h")
    app = AppServer(tmp_path, APP, "retention", weir.url)
    try:
        weir.start()
        app.start()
        app.sync()
    finally:
        app.stop()
        weir.stop()
    shorter = [*weir.args[:-2], "--retention", "1h"]
    done = subprocess.run(shorter, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "option 'batchEvents.timeout': 2h is longer than" in done.stderr
