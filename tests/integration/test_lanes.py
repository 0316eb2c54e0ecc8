"""FIFO lanes end to end, through real HTTP, with weir.sdk and with the official SDK (its lane
given through weir.sdk.official): one run of a lane at a time, in the order the events were
accepted, through retries and sleeps; each run of a lane sees a higher fence than the one
before; the runs behind say which run holds their lane. Calls under a concurrency key with
limit 1 each carry a higher fence than the call before them."""

import itertools
import json
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration.conftest import weir_and_app
from tests.integration.harness import SDK_AND_BACKEND, AppServer, WeirServer, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.parametrize(("sdk", "backend"), SDK_AND_BACKEND, scope="module"),
]

APPS = {
    "weir": "tests.integration.apps.weir_lanes",
    "inngest": "tests.integration.apps.inngest_lanes",
}
DONE = ("Completed", "Failed", "Cancelled")


@pytest.fixture(scope="module")
def lanes(
    sdk: str, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WeirServer, AppServer]]:
    tmp = tmp_path_factory.mktemp(f"lanes-{sdk}-{backend}")
    with weir_and_app(tmp, backend, APPS[sdk], f"{sdk}lanes") as servers:
        yield servers


def journal(app: AppServer) -> list[dict[str, Any]]:
    lines = app.journal.read_text().splitlines() if app.journal.exists() else []
    return [e for e in map(json.loads, lines) if e["what"] == "lane"]


def spans(entries: list[dict[str, Any]]) -> dict[str, tuple[float, float, int, int]]:
    """Per run: first step body start, last step body end, its place n and its fence."""
    out: dict[str, tuple[float, float, int, int]] = {}
    for e in entries:
        start, end, n, fence = out.get(e["run"], (e["at"], e["at"], e["n"], e["fence"]))
        assert fence == e["fence"], f"run {e['run']} saw two fences"
        out[e["run"]] = (min(start, e["at"]), max(end, e["at"]), n, fence)
    return out


def test_one_run_per_lane_at_a_time_in_order_through_retries_and_sleeps(
    lanes: tuple[WeirServer, AppServer],
) -> None:
    weir, app = lanes
    events = [{"name": "t/lane", "data": {"k": k, "n": n}} for n in range(6) for k in "ab"]
    ids = weir.send_many(events)

    def waiting_behind() -> list[dict[str, Any]] | None:
        runs = [r for e in ids[-2:] for r in weir.runs(e)]
        found = [weir.run(r["run_id"]).get("waiting") for r in runs]
        return [w for w in found if w] or None

    # The last run of each lane is created at once and waits behind its lane's holder.
    (why, *_) = wait_until(waiting_behind, timeout=10)
    assert why["kind"] == "gate" and why["gate"] == "lane" and why["key"] in ("a", "b")
    assert why["details"]["holder_run_id"] and "which holds the lane" in why["words"]

    def all_ended() -> bool:
        runs = [r for e in ids for r in weir.runs(e)]
        return len(runs) == len(ids) and all(r["status"] in DONE for r in runs)

    wait_until(all_ended, timeout=90, every=0.3)
    statuses = {r["status"] for e in ids for r in weir.runs(e)}
    assert statuses == {"Completed"}

    by_lane: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for e in journal(app):
        by_lane[e["k"]].append(e)
    assert set(by_lane) == {"a", "b"}
    for lane, entries in by_lane.items():
        runs = sorted(spans(entries).values())  # by first start
        assert [n for _, _, n, _ in runs] == list(range(6)), f"lane {lane} out of order"
        for (_, end, n, _), (start, _, later, _) in itertools.pairwise(runs):
            assert start >= end, f"lane {lane}: run {later} began before run {n} was over"
        fences = [fence for _, _, _, fence in runs]
        assert fences == sorted(set(fences)), f"lane {lane}: fences {fences} do not grow"
        retried = [e for e in entries if e["attempt"] > 0]
        assert retried, "some runs were retried while holding their lane"


def test_a_lane_is_free_again_after_its_last_run(lanes: tuple[WeirServer, AppServer]) -> None:
    weir, _ = lanes
    time.sleep(0.2)
    (event_id,) = weir.send_many([{"name": "t/lane", "data": {"k": "a", "n": 6}}])
    run = weir.finished_run(event_id, timeout=20)
    assert run["status"] == "Completed" and run.get("waiting") is None


def test_each_call_under_a_limit_1_key_carries_a_higher_fence(
    lanes: tuple[WeirServer, AppServer],
) -> None:
    weir, app = lanes
    ids = weir.send_many([{"name": "t/single", "data": {"k": k}} for k in "xxyxy"])
    wait_until(
        lambda: (
            all(r["status"] in DONE for e in ids for r in weir.runs(e))
            and len([r for e in ids for r in weir.runs(e)]) == len(ids)
        ),
        timeout=60,
        every=0.3,
    )
    entries = list(map(json.loads, app.journal.read_text().splitlines()))
    calls = [e for e in entries if e["what"] == "single"]
    assert len(calls) == 2 * len(ids)  # every step body ran once and saw a token
    for key in "xy":
        tokens = [e["fence"] for e in sorted(calls, key=lambda e: e["at"]) if e["k"] == key]
        assert tokens == sorted(set(tokens)), f"key {key}: tokens {tokens} do not grow"
