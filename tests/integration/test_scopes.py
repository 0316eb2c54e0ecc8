"""Concurrency scopes end to end with a weir.sdk app (tests/integration/apps/weir_scopes.py):
a run needing two scopes takes a slot of both or of neither, says which scope it waits for,
and the slot of a holder that died frees itself when its lease runs out."""

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import weir_and_app
from tests.integration.harness import AppServer, WeirServer, store_rows, wait_until
from tests.support.backends import BACKENDS
from tests.support.postgres import fresh_schema

pytestmark = pytest.mark.integration
APP = "tests.integration.apps.weir_scopes"


@pytest.fixture(params=BACKENDS)
def servers(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[WeirServer, AppServer]]:
    with weir_and_app(tmp_path, request.param, APP, "scopes") as pair:
        yield pair


def spans(app: AppServer, *fns: str) -> list[tuple[float, float]]:
    starts = {e["run"]: e["at"] for e in app.entries("start") if e["fn"] in fns}
    ends = {e["run"]: e["at"] for e in app.entries("end") if e["fn"] in fns}
    return [(starts[r], ends[r]) for r in starts if r in ends]


def peak(found: list[tuple[float, float]], within: tuple[float, float] | None = None) -> int:
    edges = sorted([(s, 1) for s, _ in found] + [(e, -1) for _, e in found])
    level = best = 0
    for at, delta in edges:
        level += delta
        if within is None or within[0] <= at <= within[1]:
            best = max(best, level)
    return best


def only_run(weir: WeirServer, event_id: str) -> dict[str, Any]:
    runs: list[dict[str, Any]] = wait_until(lambda: weir.runs(event_id) or None)
    return runs[0]


def test_a_run_takes_a_slot_of_every_scope_or_of_none(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, app = servers
    weir.send("t/printer", {"hold": 4.0})  # long enough for the papers to run meanwhile
    wait_until(lambda: app.entries("start"))  # the printer scope's only slot is held
    both = weir.send("t/both", {"hold": 0.2})

    def waits() -> dict[str, Any] | None:
        run = weir.run(only_run(weir, both)["run_id"])
        return run["waiting"] if run["waiting"] else None

    waiting = wait_until(waits)
    assert waiting["kind"] == "concurrency" and waiting["gate"] == "concurrency"
    (slot,) = waiting["slots"]
    assert slot["key"] == "scope printer" and (slot["used"], slot["limit"]) == (1, 1)
    assert "key 'scope printer': 1/1 slots in use" in waiting["words"]
    papers = weir.send_many([{"name": "t/paper", "data": {"hold": 0.5}} for _ in range(4)])

    for event_id in [both, *papers]:
        weir.finished_run(event_id, timeout=30)
    journal = [
        (e["what"], e["fn"], round(e["at"], 3)) for e in app.entries("start") + app.entries("end")
    ]
    [held] = spans(app, "printer")
    printer_users = spans(app, "printer", "both")
    assert peak(printer_users) == 1
    assert peak(spans(app, "paper", "both")) <= 2
    # While `both` waited for the printer it held no paper slot: two paper runs ran at once.
    assert peak(spans(app, "paper"), within=held) == 2, sorted(journal, key=lambda j: j[2])
    [(both_start, _)] = spans(app, "both")
    assert both_start >= held[1]


def test_a_scope_key_that_breaks_the_rules_starts_no_run(
    servers: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = servers
    bad = weir.send("t/user", {"user": "a\nb"})
    missing = weir.send("t/user", {})
    good = weir.send("t/user", {"user": "Ann", "hold": 0})
    assert weir.finished_run(good)["status"] == "Completed"
    for event_id, words in ((bad, "control character"), (missing, "failed")):
        outcomes = weir.event(event_id)["outcomes"]
        assert [o["outcome"] for o in outcomes] == ["invalid_scope_key"]
        assert words in outcomes[0]["detail"] and "per-user scope" in outcomes[0]["detail"]
        assert weir.runs(event_id) == []


@pytest.mark.postgres
def test_the_slot_of_a_killed_holder_frees_when_its_lease_runs_out(tmp_path: Path) -> None:
    lease_s = 3.0
    with fresh_schema() as url:
        first = WeirServer(tmp_path, "--lease", str(lease_s), database_url=url, name="weir0")
        second = WeirServer(tmp_path, "--lease", str(lease_s), database_url=url, name="weir1")
        app = AppServer(tmp_path, APP, "scopes", first.url)
        try:
            first.start()
            app.start()
            app.sync()
            held = first.send("t/printer", {"hold": 8.0})
            wait_until(lambda: app.entries("start"))
            # when the holder's slots end as stored before the kill (a later extension only
            # moves them on): no other holder may start before then
            [(expires_ms,)] = store_rows(url, "SELECT min(expires_at) FROM slots")
            first.kill()
            killed_at = time.time()
            second.start()
            after = second.send("t/printer", {"hold": 0.1})
            for event_id in (after, held):
                second.finished_run(event_id, timeout=40)
            starts = sorted(e["at"] for e in app.entries("start"))
            assert starts[1] >= expires_ms / 1000
            assert starts[1] <= killed_at + lease_s + 30  # and it does free by itself
            state = httpx.get(f"{second.url}/v1/capacity").json()["data"]
            printer = next(c for c in state if c["name"] == "scope printer")
            assert (printer["capacity"], printer["declared"], printer["drift"]) == (1, 1, False)
        finally:
            app.stop()
            second.stop()
            first.stop()


@pytest.mark.postgres
def test_two_processes_never_exceed_any_scope(tmp_path: Path) -> None:
    with fresh_schema() as url:
        servers = [WeirServer(tmp_path, database_url=url, name=f"weir{i}") for i in range(2)]
        app = AppServer(tmp_path, APP, "scopes", servers[0].url)
        try:
            servers[0].start()
            app.start()
            app.sync()
            servers[1].start()
            sent: list[str] = []
            for i, name in enumerate(["t/printer", "t/both", "t/paper", "t/paper"] * 5):
                server = servers[i % 2]  # both processes create runs and claim them
                sent += server.send_many([{"name": name, "data": {"hold": 0.15}}])
            for event_id in sent:
                servers[0].finished_run(event_id, timeout=60)
            assert peak(spans(app, "printer", "both")) == 1
            assert peak(spans(app, "paper", "both")) <= 2
            assert len(app.entries("end")) == len(sent)
        finally:
            app.stop()
            for server in servers:
                server.stop()
