"""Pausing and resuming a function with a real Weir process and a real app on loopback, on
SQLite and PostgreSQL (issue 38 item 1): skip mode stores the events, marked skipped, and
starts nothing; hold mode holds the runs, and resume lets them out in order within the
throttle; runs under way wait at their next step or are cancelled now; a restart keeps the
pause; on PostgreSQL a second process sees it."""

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until
from tests.support.backends import BACKENDS, empty_database

pytestmark = pytest.mark.integration

APP = "pausable"
LIMIT, PERIOD_S = 5, 1.0  # paced: Throttle(5, "1s", burst=0), one start per 200 ms
JITTER_S = 0.3  # as in test_throttle_restart: the app notes a start after an HTTP hop
QUIET_S = 1.5  # how long nothing may start while a function is paused


@pytest.fixture(scope="module", params=BACKENDS)
def servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WeirServer, AppServer]]:
    tmp = tmp_path_factory.mktemp(f"pause-{request.param}")
    with empty_database(request.param, tmp) as url:
        weir = WeirServer(tmp, database_url=url)
        app = AppServer(tmp, "tests.integration.apps.weir_pausable", APP, weir.url)
        try:
            weir.start()
            app.start()
            app.sync()
            yield weir, app
        finally:
            app.stop()
            weir.stop()


def slug(name: str) -> str:
    return f"{APP}-{name}"


def pause(weir: WeirServer, name: str, **body: Any) -> dict[str, Any]:
    resp = httpx.post(f"{weir.url}/v1/functions/{slug(name)}/pause", json=body)
    assert resp.status_code == 200, resp.text
    data: dict[str, Any] = resp.json()["data"]
    return data


def resume(weir: WeirServer, name: str) -> None:
    resp = httpx.post(f"{weir.url}/v1/functions/{slug(name)}/resume", json={})
    assert resp.status_code == 200, resp.text


def started(app: AppServer, what: str, ns: set[int]) -> set[int]:
    return {e["n"] for e in app.entries(what) if e["n"] in ns}


def test_skip_mode_stores_the_events_skipped_and_resume_triggers_again(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, app = servers
    pause(weir, "quick", mode="skip")
    ids = weir.send_many([{"name": "t/quick", "data": {"n": n}} for n in (1, 2, 3)])
    time.sleep(QUIET_S)
    assert started(app, "quick", {1, 2, 3}) == set()
    for event_id in ids:
        assert weir.runs(event_id) == []
        outcomes = weir.event(event_id)["outcomes"]
        assert [(o["function_id"], o["outcome"]) for o in outcomes] == [
            (slug("quick"), "function_paused")
        ]
        assert outcomes[0]["detail"].startswith("skipped: function paused since")
    resume(weir, "quick")
    later = weir.send("t/quick", {"n": 4})
    assert weir.finished_run(later)["status"] == "Completed"
    assert started(app, "quick", {1, 2, 3, 4}) == {4}  # the skipped ones stay for a replay


def most_in_any_window(times: list[float], span: float) -> int:
    return max(sum(1 for t in times if s <= t < s + span) for s in times)


def test_hold_mode_holds_runs_and_resume_releases_them_in_order_within_the_throttle(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, app = servers
    pause(weir, "paced", mode="hold")
    backlog = list(range(100, 120))
    ids = weir.send_many([{"name": "t/paced", "data": {"n": n}} for n in backlog])
    time.sleep(QUIET_S + 1.0)  # long enough for the throttle to owe a burst, were it naive
    assert started(app, "paced", set(backlog)) == set()
    [run] = weir.runs(ids[-1])
    state = weir.run(run["run_id"])["state"]
    assert state["kind"] == "paused", state
    assert "paused (hold)" in state["words"], state
    resume(weir, "paced")
    wait_until(lambda: started(app, "paced", set(backlog)) == set(backlog), timeout=60)
    starts = sorted((e for e in app.entries("paced") if e["n"] in backlog), key=lambda e: e["at"])
    assert [e["n"] for e in starts] == backlog  # in arrival order
    times = [e["at"] for e in starts]
    assert most_in_any_window(times, PERIOD_S - JITTER_S) <= LIMIT, times


def release_file(tmp: Path, name: str) -> Path:
    return tmp / f"release-{name}-{time.monotonic_ns()}"


def begun(app: AppServer, run_id: str) -> bool:
    return any(e["run"] == run_id for e in app.entries("one-begun"))


def second_ran(app: AppServer, run_id: str) -> bool:
    return any(e["run"] == run_id for e in app.entries("two"))


def stepped_run(weir: WeirServer, app: AppServer, release: Path) -> str:
    event_id = weir.send("t/stepped", {"release": str(release)})
    run_id: str = wait_until(lambda: weir.runs(event_id)[0]["run_id"])
    wait_until(lambda: begun(app, run_id))
    return run_id


def test_runs_under_way_wait_at_their_next_step_and_go_on_when_resumed(
    servers: tuple[WeirServer, AppServer], tmp_path: Path
) -> None:
    weir, app = servers
    release = release_file(tmp_path, "wait")
    run_id = stepped_run(weir, app, release)
    pause(weir, "stepped", mode="skip", in_progress="pause")
    release.touch()  # step one ends now, with the function paused
    wait_until(lambda: weir.run(run_id)["state"]["kind"] == "paused")
    time.sleep(QUIET_S)
    assert not second_ran(app, run_id)
    assert weir.run(run_id)["status"] in ("Queued", "Running")
    resume(weir, "stepped")
    wait_until(lambda: weir.run(run_id)["status"] == "Completed")
    assert second_ran(app, run_id)


def test_runs_under_way_may_be_cancelled_at_once(
    servers: tuple[WeirServer, AppServer], tmp_path: Path
) -> None:
    weir, app = servers
    release = release_file(tmp_path, "cancel")
    run_id = stepped_run(weir, app, release)
    done = pause(weir, "stepped", mode="hold", in_progress="cancel")
    assert done["runs_cancelled"] == 1
    assert weir.run(run_id)["status"] == "Cancelled"
    release.touch()
    time.sleep(QUIET_S)
    assert not second_ran(app, run_id)
    resume(weir, "stepped")
    assert weir.run(run_id)["status"] == "Cancelled"


def test_a_restart_keeps_the_pause(servers: tuple[WeirServer, AppServer]) -> None:
    weir, app = servers
    pause(weir, "quick", mode="hold")
    weir.stop()
    weir.start()
    shown = httpx.get(f"{weir.url}/v1/functions/{slug('quick')}").json()["data"]
    assert shown["paused"] is True and shown["pause"]["mode"] == "hold"
    event_id = weir.send("t/quick", {"n": 50})
    time.sleep(QUIET_S)
    assert started(app, "quick", {50}) == set()
    [run] = weir.runs(event_id)
    assert weir.run(run["run_id"])["state"]["kind"] == "paused"
    resume(weir, "quick")
    assert weir.finished_run(event_id)["status"] == "Completed"


@pytest.mark.postgres
def test_a_second_process_on_postgresql_holds_the_pause(tmp_path: Path) -> None:
    """Paused through one process, the other skips the function's events too, within the
    catalog's staleness (NOTIFY at once, the 2 s catalog poll at worst), and resumes with it."""
    with empty_database("postgresql", tmp_path) as url:
        first = WeirServer(tmp_path, database_url=url, name="weir0")
        second = WeirServer(tmp_path, database_url=url, name="weir1")
        app = AppServer(tmp_path, "tests.integration.apps.weir_pausable", APP, first.url)
        try:
            first.start()
            app.start()
            app.sync()
            second.start()
            pause(first, "quick", mode="skip")
            wait_until(lambda: _listed_paused(second, "quick"), timeout=5)
            event_id = second.send("t/quick", {"n": 70})
            [outcome] = second.event(event_id)["outcomes"]
            assert outcome["outcome"] == "function_paused"
            resume(first, "quick")
            wait_until(lambda: not _listed_paused(second, "quick"), timeout=5)
            later = second.send("t/quick", {"n": 71})
            assert second.finished_run(later)["status"] == "Completed"
        finally:
            app.stop()
            second.stop()
            first.stop()


def _listed_paused(weir: WeirServer, name: str) -> bool:
    found = httpx.get(f"{weir.url}/v1/functions").json()["data"]
    return any(f["slug"] == slug(name) and f["paused"] for f in found)


def test_skip_mode_cancels_the_runs_left_waiting_after_its_bound(tmp_path: Path) -> None:
    weir = WeirServer(tmp_path, "--paused-run-bound", "2s")
    app = AppServer(tmp_path, "tests.integration.apps.weir_pausable", APP, weir.url)
    try:
        weir.start()
        app.start()
        app.sync()
        release = release_file(tmp_path, "bound")
        run_id = stepped_run(weir, app, release)
        pause(weir, "stepped", mode="skip", in_progress="pause")
        release.touch()
        wait_until(lambda: weir.run(run_id)["status"] == "Cancelled", timeout=20)
        assert not second_ran(app, run_id)
        shown = httpx.get(f"{weir.url}/v1/functions/{slug('stepped')}").json()["data"]
        assert shown["paused"] is True  # the pause itself stays: new events are still skipped
        assert shown["pause_changes"][0]["action"] == "bound"
        assert shown["pause_changes"][0]["runs_cancelled"] == 1
    finally:
        app.stop()
        weir.stop()


def weir_cli(weir: WeirServer, *args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(
        [sys.executable, "-m", "weir", "functions", *args, "--base-url", weir.url],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ | {"WEIR_ACTOR": "oncall"},
    )


def test_the_cli_pauses_lists_and_resumes(servers: tuple[WeirServer, AppServer]) -> None:
    weir, _ = servers
    done = weir_cli(weir, "pause", slug("quick"), "--mode", "hold")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{slug('quick')}: paused (hold, runs under way: pause) since")
    assert done.stdout.strip().endswith("by oncall (dev mode (no login))")
    listed = weir_cli(weir, "list")
    [line] = [line for line in listed.stdout.splitlines() if line.startswith(slug("quick"))]
    assert "paused (hold)" in line and "oncall" in line
    shown = weir_cli(weir, "show", slug("quick"))
    assert "paused (hold, runs under way: pause) by oncall" in shown.stdout
    bad = weir_cli(weir, "pause", slug("quick"), "--mode", "freeze")
    assert bad.returncode == 2 and "invalid choice: 'freeze'" in bad.stderr
    missing = weir_cli(weir, "resume", "nope")
    assert missing.returncode == 1 and "HTTP 404: no function 'nope'" in missing.stderr
    resumed = weir_cli(weir, "resume", slug("quick"))
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == f"{slug('quick')}: not paused"
    again = weir_cli(weir, "resume", slug("quick"))
    assert again.returncode == 1 and "HTTP 409" in again.stderr
