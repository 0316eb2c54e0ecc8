"""Start mode's logins resist guessing and end for real: failed Basic and form logins back off
per (user, client address) and per address (429 + Retry-After, even for the right password
from that address while it lasts), never per user alone, and a valid admin token is never
locked out; wrong event keys and signing keys back off per address; logout revokes the session
on the server, across a restart; credentials that are not ASCII are refused like any wrong
ones, never with a 500."""

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.security import lockout, sessions

from tests.api.helpers import LOCAL
from tests.api.start_mode import (
    EVENT_KEY,
    PASSWORD,
    SIGNING_KEY,
    TOKEN,
    USER,
    csrf_of,
    login,
    start_settings,
)


class FakeClock:
    """The real time plus an offset the test moves forward (the platform keeps running)."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms

    async def sleep_ms(self, ms: int) -> None:
        import asyncio

        await asyncio.sleep(max(ms, 0) / 1000)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    # A first lock of a minute, not 2 s: a loaded machine may pause that long between the
    # guess that locks and the request that must find the lock. The tests move the clock an
    # hour on to see a lock end.
    monkeypatch.setattr(lockout, "FIRST_LOCK_MS", 60_000)
    return FakeClock()


@pytest.fixture
def app(tmp_path: Path, clock: FakeClock) -> FastAPI:
    return create_app(start_settings(tmp_path), clock)


@pytest.fixture
def secured(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, LOCAL, follow_redirects=False) as client:
        yield client


def from_address(app: FastAPI, address: str) -> TestClient:
    """Another client of the same running app, calling from another address."""
    return TestClient(app, LOCAL, follow_redirects=False, client=(address, 40000))


def guess_basic(client: TestClient, times: int, user: str = USER) -> list[int]:
    return [client.get("/v1/runs/x", auth=(user, f"guess-{i}")).status_code for i in range(times)]


def test_basic_guessing_backs_off_with_429_and_retry_after(
    secured: TestClient, clock: FakeClock
) -> None:
    statuses = guess_basic(secured, 8)
    assert statuses[:5] == [401] * 5
    assert 429 in statuses[5:]
    locked = secured.get("/v1/runs/x", auth=(USER, PASSWORD))  # even the right one, for now
    assert locked.status_code == 429
    assert int(locked.headers["retry-after"]) >= 1
    clock.offset_ms += 3600_000
    assert secured.get("/v1/runs/x", auth=(USER, PASSWORD)).status_code == 404


def test_a_valid_admin_token_is_never_locked_out(secured: TestClient) -> None:
    guess_basic(secured, 60)  # the user and the address are both locked by now
    wrong = [
        secured.get("/v1/runs/x", headers={"authorization": f"Bearer g{i}"}).status_code
        for i in range(30)
    ]
    assert set(wrong) == {401}  # a wrong token is a 401, never a lock a guesser could renew
    assert secured.get("/v1/runs/x", auth=(USER, PASSWORD)).status_code == 429
    ok = secured.get("/v1/runs/x", headers={"authorization": f"Bearer {TOKEN}"})
    assert ok.status_code == 404, ok.text  # through auth: the run is simply not there
    form = secured.post("/login", data={"user": "", "password": TOKEN})  # the form takes it too
    assert form.status_code == 303


def test_form_login_guessing_backs_off(secured: TestClient) -> None:
    statuses = [
        secured.post("/login", data={"user": USER, "password": f"g{i}"}).status_code
        for i in range(7)
    ]
    assert statuses[:5] == [401] * 5 and statuses[-1] == 429
    locked = secured.post("/login", data={"user": USER, "password": PASSWORD})
    assert locked.status_code == 429 and "retry-after" in locked.headers
    assert "Too many failed" in locked.text


def test_the_lock_is_per_client(app: FastAPI, secured: TestClient) -> None:
    guess_basic(secured, 7)
    assert secured.get("/v1/runs/x", auth=(USER, PASSWORD)).status_code == 429
    other = from_address(app, "10.0.0.2")
    assert other.get("/v1/runs/x", auth=(USER, PASSWORD)).status_code == 404
    assert other.get("/v1/runs/x", auth=(USER, "one-wrong")).status_code == 401


def test_guesses_from_elsewhere_never_lock_the_admin_out(app: FastAPI, secured: TestClient) -> None:
    # `secured` runs the app's lifespan: the requests that pass auth reach a platform
    attacker = from_address(app, "10.1.0.1")
    statuses = guess_basic(attacker, 25)  # past the old per-user limit of 20
    assert statuses[:5] == [401] * 5 and statuses[-1] == 429
    for n in range(30):  # and 3 guesses each from 30 more addresses
        guess_basic(from_address(app, f"10.1.1.{n}"), 3)
    admin = from_address(app, "10.2.0.1")
    assert admin.get("/v1/runs/x", auth=(USER, PASSWORD)).status_code == 404
    assert admin.post("/login", data={"user": USER, "password": PASSWORD}).status_code == 303
    assert attacker.get("/v1/runs/x", auth=(USER, PASSWORD)).status_code == 429


def test_one_address_guessing_many_names_is_locked_for_all_of_them(
    app: FastAPI, secured: TestClient
) -> None:
    # `secured` runs the app's lifespan: the requests that pass auth reach a platform
    sprayer = from_address(app, "10.3.0.1")
    statuses = [
        sprayer.get("/v1/runs/x", auth=(f"user{i}", "guess")).status_code for i in range(60)
    ]
    assert statuses[:50] == [401] * 50 and statuses[-1] == 429  # lockout.ADDRESS.free
    assert sprayer.get("/v1/runs/x", auth=(USER, PASSWORD)).status_code == 429
    assert from_address(app, "10.3.0.2").get("/v1/runs/x", auth=(USER, PASSWORD)).status_code == 404


def test_wrong_event_keys_back_off_per_address(app: FastAPI, secured: TestClient) -> None:
    # `secured` runs the app's lifespan: the requests that pass auth reach a platform
    guesser = from_address(app, "10.4.0.1")
    statuses = [guesser.post(f"/e/guess{i}", json={"name": "t/e"}).status_code for i in range(30)]
    free = lockout.KEYS.free
    assert statuses[: free + 1] == [401] * (free + 1) and set(statuses[free + 1 :]) == {429}
    locked = guesser.post(f"/e/{EVENT_KEY}", json={"name": "t/e"})
    assert locked.status_code == 429 and int(locked.headers["retry-after"]) >= 1
    assert locked.json()["error"].startswith("too many wrong event keys")
    sender = from_address(app, "10.4.0.2")
    assert sender.post(f"/e/{EVENT_KEY}", json={"name": "t/e"}).status_code == 200


def test_wrong_signing_keys_back_off_per_address(app: FastAPI, secured: TestClient) -> None:
    # `secured` runs the app's lifespan: the requests that pass auth reach a platform
    guesser = from_address(app, "10.5.0.1")
    statuses = [
        guesser.get("/v0/runs/r/actions", headers={"authorization": f"Bearer k{i}"}).status_code
        for i in range(30)
    ]
    free = lockout.KEYS.free
    assert statuses[: free + 1] == [401] * (free + 1) and set(statuses[free + 1 :]) == {429}
    right = {"authorization": f"Bearer {SIGNING_KEY}"}
    assert guesser.get("/v0/runs/r/actions", headers=right).status_code == 429
    app_side = from_address(app, "10.5.0.2").get("/v0/runs/r/actions", headers=right)
    assert app_side.status_code == 404, app_side.text  # through auth: no such run


def test_logout_revokes_the_session_even_across_a_restart(tmp_path: Path) -> None:
    settings = start_settings(tmp_path)
    with TestClient(create_app(settings), LOCAL, follow_redirects=False) as client:
        login(client)
        cookie = client.cookies[sessions.COOKIE]
        token = csrf_of(client.get("/events").text)
        assert client.post("/logout", data={"csrf": token}).status_code == 303
        client.cookies.set(sessions.COOKIE, cookie)  # the old cookie, replayed
        assert client.get("/runs").status_code == 303
        assert client.get("/ui/api/runs").status_code == 401
    with TestClient(create_app(settings), LOCAL, follow_redirects=False) as again:
        again.cookies.set(sessions.COOKIE, cookie)
        assert again.get("/ui/api/runs").status_code == 401
        login(again)  # a new login still works
        assert again.get("/ui/api/runs").status_code == 200


def test_a_non_ascii_cookie_is_no_session(secured: TestClient) -> None:
    cookie = {"cookie": f"{sessions.COOKIE}=eyJ1IjoiYSJ9.caf\u00e9".encode("latin-1")}
    assert secured.get("/runs", headers=cookie).status_code == 303  # type: ignore[arg-type]
    assert secured.get("/ui/api/runs", headers=cookie).status_code == 401  # type: ignore[arg-type]


def test_a_non_ascii_csrf_token_is_refused_not_a_500(secured: TestClient) -> None:
    login(secured)
    resp = secured.post("/events/send", data={"name": "t/e", "payload": "{}", "csrf": "\u00e9"})
    assert resp.status_code == 403


@pytest.mark.parametrize(
    "value",
    [b"Basic \xe9\xe9\xe9", b"Bearer caf\xe9", b"Basic Y2Fmw6k6w6k="],  # last: "café:é"
)
def test_non_ascii_authorization_is_a_401(secured: TestClient, value: bytes) -> None:
    resp = secured.get("/v1/runs/x", headers={"authorization": value})  # type: ignore[dict-item]
    assert resp.status_code == 401


@pytest.mark.parametrize("path", ["/events", "/runs", "/apps", "/ui/api/runs", "/v1/capacity"])
def test_logged_in_pages_and_answers_are_never_stored_by_a_cache(
    secured: TestClient, path: str
) -> None:
    login(secured)
    resp = secured.get(path)
    assert resp.status_code == 200, resp.text
    assert resp.headers["cache-control"] == "no-store"
    # the static files stay cacheable: they hold nothing of anyone's
    assert "no-store" not in secured.get("/static/app.css").headers.get("cache-control", "")
