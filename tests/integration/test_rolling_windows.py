"""Rolling windows end to end: weir.sdk apps note each start in their own journal, and no
window of the declared length holds more starts than the limit, per key, per shared meter
across two apps, and for the attempts of a failing start. On PostgreSQL two Weir processes
share the store and both claim. The store's own claim times are checked exactly as well."""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import AppServer, WeirServer, wait_until
from tests.support.postgres import fresh_schema

pytestmark = pytest.mark.integration

APP = "tests.integration.apps.weir_windowed"
# The app notes a start one HTTP hop after its claim: two starts a window apart at the claim
# may be noted closer together (by a few hundred ms on a loaded machine); counting in windows
# this much shorter absorbs it. The store's claim times are checked to the millisecond.
JITTER_S = 0.5


@contextmanager
def weir_processes(tmp_path: Path, backend: str) -> Iterator[list[WeirServer]]:
    if backend == "sqlite":
        yield [WeirServer(tmp_path)]
        return
    with fresh_schema() as url:
        yield [WeirServer(tmp_path, database_url=url, name=f"weir{i}") for i in range(2)]


def most_in_any_window(times: list[float], span: float) -> int:
    return max(sum(1 for t in times if s <= t < s + span) for s in times)


def exact(times: list[int], limit: int, window_ms: int) -> bool:
    """No `window_ms` window holds more than `limit` of these claim times (ms)."""
    ordered = sorted(times)
    return all(b - a >= window_ms for a, b in zip(ordered, ordered[limit:], strict=False))


def started(weir: WeirServer, event_ids: list[str], suffix: str) -> list[dict[str, Any]]:
    runs = [r for e in event_ids for r in weir.runs(e) if r["function_id"].endswith(suffix)]
    return [r for r in runs if r["run_started_at"] is not None]


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def test_starts_per_sliding_window_from_the_apps_own_logs(tmp_path: Path, backend: str) -> None:
    with weir_processes(tmp_path, backend) as servers:
        first = servers[0]
        apps = [AppServer(tmp_path, APP, name, first.url) for name in ("billing", "shop")]
        try:
            first.start()
            for app in apps:
                app.start()
                app.sync()
            for other in servers[1:]:  # started after the syncs: it loads the functions at boot
                other.start()
            keyed = first.send_many(
                [
                    {"name": "t/win", "data": {"n": n, "k": "a" if n < 10 else "b"}}
                    for n in range(12)
                ]
            )
            metered = first.send_many([{"name": "t/meter", "data": {"n": n}} for n in range(12)])
            first.send("t/flaky")
            # While the meter's backlog drains, a waiting run says which window, until when.
            waiting = wait_until(
                lambda: [
                    r["waiting"]
                    for r in (first.run(x["run_id"]) for x in first.runs(metered[-1]))
                    if r["waiting"]
                ],
                timeout=15,
            )
            assert waiting[0]["gate"] == "rolling_window"
            assert "3 per 1000 ms window is full until" in waiting[0]["words"]
            assert "(meter 'it-stripe')" in waiting[0]["words"]
            wait_until(
                lambda: all(
                    len(app.entries("keyed")) == 12
                    and len(app.entries("metered")) == 12
                    and len(app.entries("flaky")) == 2
                    for app in apps
                ),
                timeout=60,
            )
            claims = [r["run_started_at"] for r in started(first, metered, "-metered")]
            keyed_claims = [
                (r["function_id"], first.event(r["event_id"])["data"]["k"], r["run_started_at"])
                for r in started(first, keyed, "-keyed")
            ]
        finally:
            for app in apps:
                app.stop()
            for server in servers:
                server.stop()
    # Exactly, at the store's claim times: 4 per 1000 ms per app and key, 3 per 1000 ms meter.
    assert len(keyed_claims) == 24
    for group in {(fn, k) for fn, k, _ in keyed_claims}:
        times = [at for fn, k, at in keyed_claims if (fn, k) == group]
        assert exact(times, 4, 1_000), (group, sorted(times))
    assert len(claims) == 24 and exact(claims, 3, 1_000), sorted(claims)
    for app in apps:  # each app's own window per key: 4 per second
        for key, count in (("a", 10), ("b", 2)):
            times = sorted(e["at"] for e in app.entries("keyed") if e["k"] == key)
            assert len(times) == count
            assert most_in_any_window(times, 1.0 - JITTER_S) <= 4, times
        a_times = sorted(e["at"] for e in app.entries("keyed") if e["k"] == "a")
        assert a_times[-1] - a_times[0] >= 2.0 - JITTER_S  # ten at 4 per second: 3 windows
    # The meter: 24 starts over both apps, 3 per second between them.
    meter = sorted(e["at"] for app in apps for e in app.entries("metered"))
    assert len(meter) == 24
    assert most_in_any_window(meter, 1.0 - JITTER_S) <= 3, meter
    assert meter[-1] - meter[0] >= 7.0 - JITTER_S  # 24 at 3 per second: 8 windows
    assert meter[-1] - meter[0] <= 7.0 + 3.0  # deferred runs start when they may, not later
    for app in apps:  # the failed first attempt keeps its charge; the retry needs a new one
        attempts = sorted(app.entries("flaky"), key=lambda e: e["at"])
        assert [e["attempt"] for e in attempts] == [0, 1]
        assert attempts[1]["at"] - attempts[0]["at"] >= 2.0 - JITTER_S
