"""Graceful shutdown: on SIGTERM Weir stops claiming, lets calls in flight finish within the
grace period, and hands back whatever is still unfinished (lease released), so a restarted
Weir (or another process) completes the run at once instead of after the lease runs out."""

import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until

pytestmark = pytest.mark.integration
LEASE_S = 30  # Weir's default lease: a held item would stay unclaimable this long


@pytest.fixture
def servers(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[WeirServer, AppServer]]:
    weir = WeirServer(
        tmp_path,
        "--shutdown-grace",
        str(request.param),
        "--log-format",
        "json",
        "--log-level",
        "debug",
    )
    weir.start()
    app = AppServer(tmp_path, "tests.integration.apps.slow_app", "slowapp", weir.url)
    app.start()
    try:
        app.sync()
        yield weir, app
    finally:
        app.stop()
        weir.stop()


def sigterm(weir: WeirServer) -> int:
    assert weir.proc is not None
    weir.proc.send_signal(signal.SIGTERM)
    return weir.proc.wait(30)


def queued(db: Path, run_id: str) -> list[tuple[str, str | None, int]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT step_id, lease_owner, available_at FROM queue WHERE run_id = ?", (run_id,)
        )
        return list(rows)


def committed(db: Path, run_id: str) -> set[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT name FROM steps WHERE run_id = ?", (run_id,))
        return {row[0] for row in rows}


def run_id_of(weir: WeirServer, event_id: str) -> str:
    runs = wait_until(lambda: weir.runs(event_id))
    return str(runs[0]["run_id"])


@pytest.mark.parametrize("servers", [0.2], indirect=True)
def test_a_call_still_running_after_the_grace_period_is_handed_back(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, app = servers
    event_id = weir.send("t/slow", {"seconds": LEASE_S})
    run_id = run_id_of(weir, event_id)
    wait_until(lambda: app.entries("slow-begin"))
    assert sigterm(weir) == 0, "Weir exits cleanly on SIGTERM"
    [(_, owner, available_at)] = queued(weir.db, run_id)
    assert owner is None, "the unfinished call's lease was released"
    assert available_at <= time.time() * 1000, "the item is claimable now, not at lease end"
    assert "handed back 1 unfinished items" in weir.log.read_text()
    weir.start()
    run = weir.finished_run(event_id, timeout=LEASE_S / 2)
    assert run["status"] == "Completed"
    assert run["output"] == ["first", "slow", "last"]
    assert len(app.entries("first")) == 1
    assert len(app.entries("slow-begin")) == 2, "the interrupted step ran again"


@pytest.mark.parametrize("servers", [30.0], indirect=True)
def test_a_call_finishing_within_the_grace_period_commits_its_result(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, app = servers
    event_id = weir.send("t/slow", {"seconds": 1})
    run_id = run_id_of(weir, event_id)
    wait_until(lambda: app.entries("slow-begin"))
    assert sigterm(weir) == 0
    assert len(app.entries("slow-end")) == 1, "the call was let finish"
    assert {"first", "slow"} <= committed(weir.db, run_id)
    assert all(owner is None for _, owner, _ in queued(weir.db, run_id)), "nothing left held"
    weir.start()
    run = weir.finished_run(event_id)
    assert run["status"] == "Completed"
    assert len(app.entries("slow-begin")) == 1, "the committed step never ran again"
    lines = [json.loads(line) for line in weir.log.read_text().splitlines()]
    [slow] = [x for x in lines if x["msg"] == "step completed" and x.get("name") == "slow"]
    assert (slow["run_id"], slow["event_id"], slow["function"]) == (
        run_id,
        event_id,
        "slowapp-slow",
    )
    assert slow["step_id"] and slow["function_id"]
    # uvicorn's own lines are JSON too: one handler for every logger
    assert any(x["msg"] == "Application shutdown complete." for x in lines)
