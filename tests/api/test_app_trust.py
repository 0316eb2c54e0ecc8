"""Calls between Weir and apps cannot be redirected or starved: a 30x from an app is an error
naming where it pointed, never followed (it could lead off --allowed-app-hosts carrying a signed
request); a hanging app holds at most its share of the calls in flight; a sync gives up after
the short sync timeout; cancelling a run aborts its call. Weir runs in-process (TestClient);
the apps are the raw loopback server of evil_app.py."""

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from weir.app import create_app
from weir.platform.executor import signing
from weir.platform.executor.signing import sign
from weir.platform.settings import Settings

from tests.api.evil_app import EvilApp, Handler, answer, head
from tests.api.evil_weir import ADMIN, SDK, SIGNING_KEY, Weir, evil_function, failed_with
from tests.api.helpers import LOCAL
from tests.support.backends import ONLY_POSTGRESQL


async def redirect(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    # "localhost" is the same server under a name --allowed-app-hosts does not list
    w.write(head(307, 0, {"location": f"http://localhost:{app.port}/trap"}))
    await w.drain()


async def trap(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    await answer(w, 200, {"trapped": True}, key=app.key)


async def hang(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    """Starts an answer that never ends; counts the calls whose caller hung up."""
    w.write(head(200, 10**9))
    try:
        for _ in range(1200):
            await asyncio.sleep(0.05)
            w.write(b" ")
            await w.drain()
    except ConnectionError:
        app.calls["hang_aborted"] = app.calls.get("hang_aborted", 0) + 1


async def stale(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    """A validly signed answer, but signed ten minutes ago: a replay of an old one."""
    body = json.dumps({"ok": True}).encode()
    old = sign(body, SIGNING_KEY, int(time.time()) - 600)
    w.write(head(200, len(body), {"x-inngest-signature": old}) + body)
    await w.drain()


def bound_answer(app: EvilApp, body: bytes) -> bytes:
    """An answer signed as weir.sdk signs it: over the body, and bound to the request."""
    now = int(time.time())
    parsed = signing.parse(app.request_headers.get("x-inngest-signature", ""))
    assert parsed is not None
    headers = {
        "x-inngest-signature": sign(body, SIGNING_KEY, now),
        "x-weir-signature": signing.bind(body, SIGNING_KEY, now, parsed[1]),
    }
    return head(200, len(body), headers) + body


async def bound(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    w.write(bound_answer(app, json.dumps({"run": req["ctx"]["run_id"]}).encode()))
    await w.drain()


async def replay(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    """Answers the first request as it should, then every later one with that same answer."""
    if "replay" not in app.saved:
        app.saved["replay"] = bound_answer(app, json.dumps({"run": req["ctx"]["run_id"]}).encode())
    w.write(app.saved["replay"])
    await w.drain()


def signed_bytes(status: int, value: Any) -> bytes:
    """An answer as the official SDK signs it: over the body and the time, nothing else."""
    body = json.dumps(value).encode()
    signature = sign(body, SIGNING_KEY, int(time.time()))
    return head(status, len(body), {"x-inngest-signature": signature}) + body


def planned(step_id: str) -> dict[str, Any]:
    return {"op": "StepPlanned", "id": step_id, "name": step_id, "displayName": step_id}


def step_done(step_id: str) -> dict[str, Any]:
    return {"op": "StepRun", "id": step_id, "name": step_id, "displayName": step_id, "data": 1}


async def replay_step(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
    """Answers every request with its first, signed answer: the step `one` done, again and
    again, though the later requests carry `one` as done."""
    if "replay_step" not in app.saved:
        app.saved["replay_step"] = signed_bytes(206, [step_done("one")])
    w.write(app.saved["replay_step"])
    await w.drain()


def parallel(replayed: bool) -> Handler:
    """Plans p1 and p2, then answers the targeted requests: each for its own step, or (when
    `replayed`) every one with the first targeted answer it sent."""

    async def mode(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
        target = req["ctx"]["step_id"]
        done = set(req["steps"])
        if target == "step":
            todo = [planned(s) for s in ("p1", "p2") if s not in done]
            w.write(signed_bytes(206, todo) if todo else signed_bytes(200, {"ok": True}))
        elif replayed:
            app.saved.setdefault("first", signed_bytes(206, [step_done(target)]))
            w.write(app.saved["first"])
        else:
            w.write(signed_bytes(206, [step_done(target)]))
        await w.drain()

    return mode


MODES: dict[str, Handler] = {
    "replay_step": replay_step,
    "parallel_replayed": parallel(replayed=True),
    "parallel_honest": parallel(replayed=False),
    "redirect": redirect,
    "trap": trap,
    "hang": hang,
    "stale": stale,
    "bound": bound,
    "replay": replay,
}


def settings(database_url: str, **changes: Any) -> Settings:
    base: dict[str, Any] = {
        "database_url": database_url,
        "sqlite_synchronous": "OFF",
        "event_keys": ("key",),
        "signing_keys": (SIGNING_KEY,),
        "admin_token": "admin",
        "retry_delay_ms": 20,
        "allowed_app_hosts": ("127.0.0.1",),
    }
    return Settings(**(base | changes))


@contextlib.contextmanager
def running(database_url: str, **changes: Any) -> Iterator[Weir]:
    with (
        EvilApp(SIGNING_KEY, MODES).running() as evil,
        TestClient(create_app(settings(database_url, **changes)), LOCAL) as client,
    ):
        yield Weir(client, evil)


@pytest.fixture
def weir(database_url: str) -> Iterator[Weir]:
    with running(database_url) as weir:
        yield weir


def register(weir: Weir, app: str, mode: str, sdk: str = "evil:v0") -> None:
    body = {
        "appname": app,
        "url": weir.evil.url(mode),
        "sdk": sdk,
        "v": "0.1",
        "deploy_type": "ping",
        "functions": [evil_function(weir.evil.url(mode), mode, 0)],
    }
    resp = weir.client.post("/fn/register", json=body, headers=SDK)
    assert resp.status_code == 200, resp.text


def wait_for(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def status(weir: Weir, event_id: str) -> str | None:
    runs = weir.client.get(f"/v1/events/{event_id}/runs", headers=ADMIN).json()["data"]
    return runs[0]["status"] if runs else None


def test_a_redirecting_app_fails_the_call_naming_the_location(weir: Weir) -> None:
    weir.sync("redirect", retries=1)
    message = failed_with(weir.run_of("redirect"), "Redirected")
    assert f"http://localhost:{weir.evil.port}/trap" in message and "307" in message
    assert weir.evil.calls["redirect"] == 2  # retried like any failed call
    assert "trap" not in weir.evil.calls  # never followed


def test_a_sync_answered_with_a_redirect_is_refused_naming_the_location(weir: Weir) -> None:
    platform = weir.client.app.state.platform  # type: ignore[attr-defined]
    assert weir.client.portal is not None
    error = weir.client.portal.call(platform.sync_url, weir.evil.url("redirect"))
    assert f"http://localhost:{weir.evil.port}/trap" in error and "307" in error
    assert "trap" not in weir.evil.calls


# -- starvation --------------------------------------------------------------------------------


def test_a_hanging_app_holds_only_its_share_of_the_calls(database_url: str) -> None:
    with running(
        database_url, workers=4, calls_per_app=2, app_timeout_s=60, shutdown_grace_s=0.1
    ) as weir:
        register(weir, "stuck", "hang")
        register(weir, "healthy", "good")
        for _ in range(4):
            weir.start("hang")
        wait_for(lambda: weir.evil.calls.get("hang") == 2)
        assert weir.finished(weir.start("good"), timeout=10)["status"] == "Completed"
        assert weir.evil.calls["hang"] == 2  # the other two wait for a slot of their app


def test_a_sync_gives_up_after_the_sync_timeout(database_url: str) -> None:
    with running(database_url, sync_timeout_s=0.5, app_timeout_s=30) as weir:
        platform = weir.client.app.state.platform  # type: ignore[attr-defined]
        assert weir.client.portal is not None
        started = time.monotonic()
        error = weir.client.portal.call(platform.sync_url, weir.evil.url("hang"))
        assert time.monotonic() - started < 5
        assert "Timeout" in error


def test_cancelling_a_run_aborts_its_call_at_once(database_url: str) -> None:
    with running(database_url, app_timeout_s=60, shutdown_grace_s=0.1) as weir:
        register(weir, "stuck", "hang")
        event_id = weir.start("hang")
        wait_for(lambda: weir.evil.calls.get("hang") == 1)
        run_id = weir.client.get(f"/v1/events/{event_id}/runs", headers=ADMIN).json()["data"][0]
        resp = weir.client.delete(f"/v1/runs/{run_id['run_id']}", headers=ADMIN)
        assert resp.json()["data"]["cancelled"] is True
        assert status(weir, event_id) == "Cancelled"
        platform = weir.client.app.state.platform  # type: ignore[attr-defined]
        wait_for(lambda: weir.evil.calls.get("hang_aborted") == 1, timeout=3)
        wait_for(lambda: not platform.scheduler.inflight, timeout=3)
        # The worker itself finished the aborted call's item: the abort's cancellation of
        # its task was taken back, not left to kill it at its next await.
        count = "SELECT count(*) FROM queue"
        assert platform.db.read_sync(lambda c: c.execute(text(count)).scalar()) == 0
        time.sleep(0.3)
        assert weir.evil.calls["hang"] == 1  # not retried
        assert status(weir, event_id) == "Cancelled"


@ONLY_POSTGRESQL
def test_a_run_cancelled_by_another_process_has_its_call_aborted(database_url: str) -> None:
    url = database_url
    with running(url, app_timeout_s=60, shutdown_grace_s=0.1) as weir:
        register(weir, "stuck", "hang")
        event_id = weir.start("hang")
        wait_for(lambda: weir.evil.calls.get("hang") == 1)
        # what another Weir process's cancel leaves in the store: this one is not told
        with create_engine(url).begin() as conn:
            conn.execute(text("UPDATE runs SET status = 'CANCELLED'"))
        platform = weir.client.app.state.platform  # type: ignore[attr-defined]
        wait_for(lambda: weir.evil.calls.get("hang_aborted") == 1, timeout=5)
        wait_for(lambda: not platform.scheduler.inflight, timeout=3)
        assert status(weir, event_id) == "Cancelled"


# -- answers bound to their requests (start mode) -----------------------------------------------


@pytest.fixture
def signed(database_url: str) -> Iterator[Weir]:
    with running(database_url, dev=False) as weir:
        yield weir


def test_an_answer_signed_long_before_the_request_is_refused(signed: Weir) -> None:
    register(signed, "evil", "stale")
    message = failed_with(signed.run_of("stale"), "InvalidSignature")
    assert "300 s" in message and "replayed" in message


def test_an_answer_bound_to_its_request_is_accepted(signed: Weir) -> None:
    register(signed, "weir", "bound", sdk="weir-py:v0.1.0")
    run = signed.run_of("bound")
    assert run["status"] == "Completed", run["output"]
    assert run["output"] == {"run": run["run_id"]}


def test_an_answer_replayed_for_another_run_is_refused(signed: Weir) -> None:
    register(signed, "weir", "replay", sdk="weir-py:v0.1.0")
    first = signed.run_of("replay")
    assert first["status"] == "Completed" and first["output"] == {"run": first["run_id"]}
    message = failed_with(signed.run_of("replay"), "InvalidSignature")
    assert "X-Weir-Signature" in message


# An official-SDK answer is signed over its body and time only: what Weir can still bind.


def test_an_unbound_answer_reporting_a_step_already_done_is_refused(signed: Weir) -> None:
    register(signed, "evil", "replay_step")
    message = failed_with(signed.run_of("replay_step", timeout=20), "ReplayedAnswer")
    assert "'one'" in message and "carried as done" in message
    assert signed.evil.calls["replay_step"] == 2  # the genuine answer, then the replay


def test_an_unbound_answer_for_another_targeted_step_is_refused(signed: Weir) -> None:
    register(signed, "evil", "parallel_replayed")
    message = failed_with(signed.run_of("parallel_replayed", timeout=20), "ReplayedAnswer")
    assert "but the request targeted step" in message


def test_unbound_answers_for_their_own_requests_are_accepted(signed: Weir) -> None:
    register(signed, "evil", "parallel_honest")
    run = signed.run_of("parallel_honest", timeout=20)
    assert run["status"] == "Completed" and run["output"] == {"ok": True}, run["output"]
