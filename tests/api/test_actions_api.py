"""The acting endpoints: rerun from a step, bulk cancel by filter, invoke with a payload,
delete and move an app, and the flow-control playground (`/simulate`), each with its bad
inputs answered by a clear 4xx. Weir runs in start mode in-process, in front of a raw app on
loopback (evil_app.py), once on SQLite and once on PostgreSQL."""

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app

from tests.api.evil_app import EvilApp, answer, depth, step_run
from tests.api.evil_weir import ADMIN, SDK, SIGNING_KEY, Weir, cloud_settings, evil_function
from tests.api.helpers import LOCAL


async def two_steps(w: Any, req: dict[str, Any], app: EvilApp) -> None:
    """Step a, then step b, then done; counts the calls made with no step memoized."""
    n = depth(req)
    if n == 0:
        app.calls["fresh"] = app.calls.get("fresh", 0) + 1
        await answer(w, 206, [step_run("a", "from a")], key=app.key)
    elif n == 1:
        await answer(w, 206, [step_run("b", "from b")], key=app.key)
    else:
        await answer(w, 200, {"done": True}, key=app.key)


@pytest.fixture
def weir(database_url: str) -> Iterator[Weir]:
    settings = cloud_settings(database_url)
    evil = EvilApp(SIGNING_KEY, {"two_steps": two_steps})
    with evil.running() as app, TestClient(create_app(settings), LOCAL) as client:
        yield Weir(client, app)


def sync(weir: Weir, *functions: dict[str, Any]) -> None:
    body = {
        "appname": "evil",
        "url": weir.evil.url("good"),
        "sdk": "evil:v0",
        "v": "0.1",
        "deploy_type": "ping",
        "functions": list(functions),
    }
    resp = weir.client.post("/fn/register", json=body, headers=SDK)
    assert resp.status_code == 200, resp.text


def ended(weir: Weir, run_id: str, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        data: dict[str, Any] = weir.client.get(f"/v1/runs/{run_id}", headers=ADMIN).json()["data"]
        if data["status"] in ("Completed", "Failed", "Cancelled"):
            return data
        time.sleep(0.05)
    raise AssertionError(f"run {run_id} did not end within {timeout}s")


def post(weir: Weir, path: str, body: Any = None, raw: bytes | None = None) -> Any:
    if raw is not None:
        headers = ADMIN | {"content-type": "application/json"}
        return weir.client.post(path, content=raw, headers=headers)
    return weir.client.post(path, json=body, headers=ADMIN)


# -- rerun from a step -----------------------------------------------------------------------
def test_rerun_from_a_step_keeps_the_steps_before_it(weir: Weir) -> None:
    sync(weir, evil_function(weir.evil.url("two_steps"), "two_steps", 0))
    first = weir.run_of("two_steps")
    assert first["status"] == "Completed", first
    assert weir.evil.calls["fresh"] == 1

    resp = post(weir, f"/v1/runs/{first['run_id']}/rerun", {"from_step": "b"})

    assert resp.status_code == 200, resp.text
    again = ended(weir, resp.json()["data"]["run_id"])
    assert again["status"] == "Completed" and again["output"] == {"done": True}
    assert [s["name"] for s in again["steps"]] == ["a", "b"]
    assert again["steps"][0]["result"] == first["steps"][0]["result"]
    assert weir.evil.calls["fresh"] == 1  # step a was not run again
    assert again["original_run_id"] == first["run_id"]


def test_rerun_from_a_step_refuses_unknown_steps_and_bad_bodies(weir: Weir) -> None:
    sync(weir, evil_function(weir.evil.url("two_steps"), "two_steps", 0))
    run_id = weir.run_of("two_steps")["run_id"]
    unknown = post(weir, f"/v1/runs/{run_id}/rerun", {"from_step": "zzz"})
    assert unknown.status_code == 409
    assert "no completed step 'zzz'" in unknown.json()["error"]
    assert "a, b" in unknown.json()["error"]  # it lists the steps there are
    for body, says in [
        (b"{", "not JSON"),
        (b"[1]", "must be"),
        (b'{"from_step": 3}', "non-empty string"),
        (b'{"from": "a"}', "must be"),
    ]:
        resp = post(weir, f"/v1/runs/{run_id}/rerun", raw=body)
        assert resp.status_code == 400, (body, resp.text)
        assert says in resp.json()["error"]


# -- bulk cancel -----------------------------------------------------------------------------
def _throttled(weir: Weir) -> dict[str, Any]:
    fn = evil_function(weir.evil.url("never_ends"), "never_ends", 0)
    return fn | {"throttle": {"limit": 1, "period": "1h"}}


def test_bulk_cancel_counts_first_then_cancels_only_the_matching_active_runs(weir: Weir) -> None:
    sync(weir, _throttled(weir), evil_function(weir.evil.url("good"), "good", 0))
    done = weir.run_of("good")  # ended: never touched
    queued = [weir.start("never_ends") for _ in range(3)]
    slug = "evil-never-ends"

    preview = post(weir, "/v1/runs/cancel", {"function_id": slug, "dry_run": True})
    assert preview.status_code == 200, preview.text
    assert preview.json()["data"] == {"matched": 3, "cancelled": []}

    resp = post(weir, "/v1/runs/cancel", {"function_id": slug, "status": ["Queued", "Running"]})
    assert resp.json()["data"]["matched"] == 3
    assert len(resp.json()["data"]["cancelled"]) == 3
    for event_id in queued:
        run = weir.client.get(f"/v1/events/{event_id}/runs", headers=ADMIN).json()["data"][0]
        assert run["status"] == "Cancelled"
    still = weir.client.get(f"/v1/runs/{done['run_id']}", headers=ADMIN).json()["data"]
    assert still["status"] == "Completed"
    again = post(weir, "/v1/runs/cancel", {"function_id": slug, "dry_run": True})
    assert again.json()["data"]["matched"] == 0


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({}, "give at least one filter"),
        ({"function_id": "nope"}, "names no registered function"),
        ({"status": ["Completed"]}, "cannot be cancelled; allowed: Queued, Running"),
        ({"status": "Queued"}, "must be a list"),
        ({"queued_after": "yesterday"}, "Unix milliseconds"),
        ({"search": 5}, "search must be a string"),
        ({"dry_run": "yes"}, "true or false"),
        ({"functions": "x"}, "unknown field(s) functions"),
        ([], "must be a JSON object"),
    ],
)
def test_bulk_cancel_bad_filters_are_400(weir: Weir, body: Any, says: str) -> None:
    resp = post(weir, "/v1/runs/cancel", body)
    assert resp.status_code == 400, resp.text
    assert says in resp.json()["error"]


# -- invoke ----------------------------------------------------------------------------------
def test_invoke_starts_the_function_with_the_payload(weir: Weir) -> None:
    sync(weir, evil_function(weir.evil.url("good"), "good", 0))
    resp = post(weir, "/v1/functions/evil-good/invoke", {"data": {"order": 7}})
    assert resp.status_code == 200, resp.text
    [run_id] = resp.json()["data"]["run_ids"]
    assert ended(weir, run_id)["status"] == "Completed"
    event_id = resp.json()["data"]["event_id"]
    event = weir.client.get(f"/v1/events/{event_id}", headers=ADMIN).json()["data"]
    assert event["name"] == "inngest/function.invoked"
    assert event["data"]["order"] == 7


def test_invoke_bad_input(weir: Weir) -> None:
    sync(weir, evil_function(weir.evil.url("good"), "good", 0))
    assert post(weir, "/v1/functions/nope/invoke", {"data": {}}).status_code == 404
    for body, says in [
        (b"{", "not JSON"),
        (b'{"data": [1]}', "data must be a JSON object"),
        (b'{"payload": {}}', 'must be {"data"'),
    ]:
        resp = post(weir, "/v1/functions/evil-good/invoke", raw=body)
        assert resp.status_code == 400, resp.text
        assert says in resp.json()["error"]


# -- apps ------------------------------------------------------------------------------------
def test_delete_an_app_archives_its_functions(weir: Weir) -> None:
    sync(weir, evil_function(weir.evil.url("good"), "good", 0))
    resp = weir.client.delete("/v1/apps/evil", headers=ADMIN)
    assert resp.status_code == 200, resp.text
    gone = weir.client.post("/e/key", json={"name": "evil/good"}).json()["ids"][0]
    assert weir.client.get(f"/v1/events/{gone}/runs", headers=ADMIN).json()["data"] == []
    assert post(weir, "/v1/functions/evil-good/invoke", {"data": {}}).status_code == 404
    assert weir.client.delete("/v1/apps/evil", headers=ADMIN).status_code == 404
    sync(weir, evil_function(weir.evil.url("good"), "good", 0))  # syncing brings it back
    assert weir.run_of("good")["status"] == "Completed"


def test_move_an_app_refuses_bad_urls_and_failed_syncs(weir: Weir) -> None:
    sync(weir, evil_function(weir.evil.url("good"), "good", 0))
    patch = weir.client.patch
    assert (
        patch("/v1/apps/nope", json={"url": "http://127.0.0.1:1/x"}, headers=ADMIN).status_code
        == 404
    )
    bad = patch("/v1/apps/evil", json={"url": "ftp://x"}, headers=ADMIN)
    assert bad.status_code == 400 and "http(s)://" in bad.json()["error"]
    failed = patch("/v1/apps/evil", json={"url": "http://127.0.0.1:1/api"}, headers=ADMIN)
    assert failed.status_code == 409 and "sync from http://127.0.0.1:1/api failed" in failed.text


# -- the flow-control playground ---------------------------------------------------------------
def test_simulate_matches_what_the_platform_then_does(weir: Weir) -> None:
    limited = evil_function(weir.evil.url("good"), "good", 0)
    sync(weir, limited | {"rateLimit": {"limit": 2, "period": "1h"}})
    events = [{"at_ms": i, "data": {"n": i}} for i in range(5)]
    resp = post(weir, "/v1/functions/evil-good/simulate", {"events": events})
    assert resp.status_code == 200, resp.text
    sim = resp.json()["data"]
    predicted = [len(e["runs"]) for e in sim["events"]]
    assert predicted == [1, 1, 0, 0, 0]
    assert all(any(x["outcome"] == "rate_limited" for x in e["effects"]) for e in sim["events"][2:])
    # The same five events for real: the same ones start runs.
    ids = [
        weir.client.post("/e/key", json={"name": "evil/good", "data": {"n": i}}).json()["ids"][0]
        for i in range(5)
    ]
    real = [len(weir.client.get(f"/v1/events/{e}/runs", headers=ADMIN).json()["data"]) for e in ids]
    assert real == predicted
    # and the simulation wrote nothing to the real store
    listed = weir.client.get(f"/v1/events/{ids[0]}/runs", headers=ADMIN).json()["data"]
    assert len(listed) == 1


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b"{", 400, "not JSON"),
        (b"[]", 400, "must be a JSON object"),
        (b'{"events": 3}', 400, '"events" must be a list'),
        (b'{"events": [], "speed": 2}', 400, "unknown field(s) speed"),
        (b'{"events": [{"at_ms": "soon"}]}', 400, "events[0].at_ms must be a whole number"),
        (b'{"events": [{"at_ms": 0, "data": [1]}]}', 400, "events[0].data must be a JSON object"),
        (b'{"events": [{"at_ms": 0, "when": 1}]}', 400, "unknown field(s) when"),
        (b'{"events": [{"at_ms": 0, "name": "other/x"}]}', 400, "does not trigger"),
        (b'{"events": []}', 400, "at least one event"),
        (b'{"events": [{"at_ms": 0}], "run_ms": -1}', 400, "run_ms = -1"),
    ],
)
def test_simulate_bad_input(weir: Weir, body: bytes, status: int, says: str) -> None:
    sync(weir, evil_function(weir.evil.url("good"), "good", 0))
    resp = post(weir, "/v1/functions/evil-good/simulate", raw=body)
    assert resp.status_code == status, resp.text
    assert says in resp.json()["error"]


def test_simulate_an_unknown_function_is_404(weir: Weir) -> None:
    resp = post(weir, "/v1/functions/nope/simulate", {"events": [{"at_ms": 0}]})
    assert resp.status_code == 404 and "no function" in resp.json()["error"]
