"""Flow control through real HTTP with short periods, for functions declared with weir.sdk and
with the official inngest SDK alike. Exact-to-the-millisecond timing is pinned by the unit
tests on a fake clock; here the same rules are checked end to end from the store's records."""

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.integration.conftest import weir_and_app
from tests.integration.harness import SDK_AND_BACKEND, AppServer, WeirServer, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.parametrize(("sdk", "backend"), SDK_AND_BACKEND, scope="module"),
]

FLOW_APPS = {
    "weir": "tests.integration.apps.weir_flow",
    "inngest": "tests.integration.apps.inngest_flow",
}


@pytest.fixture(scope="module")
def flow(
    sdk: str, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WeirServer, AppServer]]:
    tmp = tmp_path_factory.mktemp(f"flow-{sdk}-{backend}")
    with weir_and_app(tmp, backend, FLOW_APPS[sdk], f"{sdk}flow") as servers:
        yield servers


def ended(weir: WeirServer, event_ids: list[str], slug: str, count: int) -> list[dict[str, Any]]:
    """Wait until `count` distinct runs of function `slug` started by these events have ended."""

    def done() -> list[dict[str, Any]] | None:
        runs = {
            r["run_id"]: r
            for e in event_ids
            for r in weir.runs(e)
            if r["function_id"].endswith(f"-{slug}")
        }
        finished = [r for r in runs.values() if r["status"] in ("Completed", "Failed", "Cancelled")]
        return [weir.run(r["run_id"]) for r in finished] if len(finished) >= count else None

    result: list[dict[str, Any]] = wait_until(done, timeout=30)
    return sorted(result, key=lambda r: r["queued_at"])


def max_overlap(spans: list[tuple[int, int]]) -> int:
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    level = peak = 0
    for _, delta in edges:  # an end at the same ms as a start sorts first: no false overlap
        level += delta
        peak = max(peak, level)
    return peak


def calls(run: dict[str, Any]) -> list[tuple[int, int]]:
    return [(h["started_at"], h["ended_at"]) for h in run["history"] if h["kind"] == "call"]


def test_concurrency_per_key_is_never_exceeded(flow: tuple[WeirServer, AppServer]) -> None:
    weir, _ = flow
    ids = weir.send_many([{"name": "t/conc", "data": {"k": k}} for k in "aaaaab"])
    runs = ended(weir, ids, "conc", 6)
    for key, limit_reached in (("a", True), ("b", False)):
        keyed = [r for r in runs if weir.event(r["event_id"])["data"]["k"] == key]
        peak = max_overlap([span for r in keyed for span in calls(r)])
        assert peak <= 2
        assert (peak == 2) is limit_reached  # five runs of "a" do fill both slots


def test_throttle_spreads_starts_and_none_is_early(flow: tuple[WeirServer, AppServer]) -> None:
    weir, _ = flow
    ids = weir.send_many([{"name": "t/throttle", "data": {"n": n}} for n in range(4)])
    runs = ended(weir, ids, "throttled", 4)
    first_queued = runs[0]["queued_at"]
    starts = sorted(r["run_started_at"] for r in runs)
    for i, start in enumerate(starts):  # 2 per 2 s, burst 0: one at once, then one a second
        assert start >= first_queued + 1000 * i


def test_rate_limit_skips_extras_and_says_why(flow: tuple[WeirServer, AppServer]) -> None:
    weir, _ = flow
    ids = weir.send_many([{"name": "t/limit", "data": {"n": n}} for n in range(5)])
    runs = ended(weir, ids, "limited", 2)
    assert sorted(r["output"] for r in runs) == [0, 1]
    skipped = [o for e in ids[2:] for o in weir.event(e)["outcomes"]]
    assert [o["outcome"] for o in skipped] == ["rate_limited"] * 3
    assert all(o["function_id"].endswith("-limited") for o in skipped)
    assert "rate_limit" in skipped[0]["detail"]


# serial: the events must land within the debounce period, which other workers may stretch
@pytest.mark.serial
def test_debounce_runs_once_with_the_last_event(flow: tuple[WeirServer, AppServer]) -> None:
    weir, _ = flow
    ids = []
    for n in range(3):
        ids.append(weir.send("t/debounce", {"k": "x", "n": n}))
        time.sleep(0.3)
    ids.append(weir.send("t/debounce", {"k": "y", "n": 9}))
    runs = ended(weir, ids, "debounced", 2)
    assert sorted(r["output"]["n"] for r in runs) == [2, 9]
    last_x = weir.event(ids[2])
    x_run = next(r for r in runs if r["output"]["k"] == "x")
    assert x_run["queued_at"] >= last_x["received_at"] + 1000
    first = weir.event(ids[0])["outcomes"]  # debounced, then superseded by the next event
    assert [o["outcome"] for o in first] == ["debounced", "superseded"]
    assert first[1]["detail"] == f"superseded in the debounce window by event {ids[1]}"
    assert [o["outcome"] for o in weir.event(ids[2])["outcomes"]] == ["debounced"]  # it ran


def test_batches_fill_then_time_out(flow: tuple[WeirServer, AppServer]) -> None:
    weir, _ = flow
    ids = weir.send_many([{"name": "t/batch", "data": {"n": n}} for n in range(4)])
    runs = ended(weir, ids, "batched", 2)
    assert [r["output"] for r in runs] == [[0, 1, 2], [3]]
    assert runs[1]["queued_at"] >= weir.event(ids[3])["received_at"] + 1000


def test_singleton_skips_while_the_key_is_held(flow: tuple[WeirServer, AppServer]) -> None:
    weir, _ = flow
    holder_event = weir.send("t/single", {"k": "s"})
    holder = wait_until(lambda: weir.runs(holder_event)[0]["run_id"])
    skipped = weir.send("t/single", {"k": "s"})
    other = weir.send("t/single", {"k": "t"})
    runs = ended(weir, [holder_event, other], "single", 2)
    assert [r["output"] for r in runs] == ["held", "held"]
    outcome = weir.event(skipped)["outcomes"]
    assert [(o["outcome"], o["run_id"]) for o in outcome] == [("singleton_skipped", holder)]


def test_cancel_on_a_matching_event(flow: tuple[WeirServer, AppServer]) -> None:
    weir, _ = flow
    doomed = weir.send("t/cancellable", {"id": "c1"})
    spared = weir.send("t/cancellable", {"id": "c2"})
    run_id = wait_until(lambda: weir.runs(doomed)[0]["run_id"])
    wait_until(lambda: any(h["kind"] == "sleep" for h in weir.run(run_id)["history"]))
    weir.send("t/cancel", {"id": "c1"})
    runs = ended(weir, [doomed, spared], "cancellable", 2)
    by_id = {weir.event(r["event_id"])["data"]["id"]: r for r in runs}
    assert by_id["c1"]["status"] == "Cancelled"
    assert by_id["c2"]["status"] == "Completed"


def test_priority_orders_the_backlog(flow: tuple[WeirServer, AppServer]) -> None:
    weir, app = flow
    first = weir.send("t/prio", {"p": 0, "k": "first"})
    wait_until(lambda: any(e["k"] == "first" for e in app.entries("busy")))
    rest = weir.send_many(
        [
            {"name": "t/prio", "data": {"p": p, "k": k}}
            for p, k in ((0, "low1"), (0, "low2"), (120, "high"))
        ]
    )
    ended(weir, [first, *rest], "prio", 4)
    order = [
        e["k"]
        for e in app.entries("busy")
        if e["edge"] == "start" and e["k"] in ("first", "low1", "low2", "high")
    ]
    assert order == ["first", "high", "low1", "low2"]


def test_finish_timeout_cancels_the_run(flow: tuple[WeirServer, AppServer]) -> None:
    weir, _ = flow
    (run,) = ended(weir, [weir.send("t/timed")], "timed", 1)
    assert run["status"] == "Cancelled"
    assert run["ended_at"] - run["run_started_at"] < 3000  # before its 3 s sleep ended


def test_skip_records_are_in_the_api_for_unknown_events_too(
    flow: tuple[WeirServer, AppServer],
) -> None:
    weir, _ = flow
    event_id = weir.send("t/nobody-listens")
    assert weir.event(event_id)["outcomes"] == []
    assert httpx.get(f"{weir.url}/v1/events/{event_id}/runs").json()["data"] == []
