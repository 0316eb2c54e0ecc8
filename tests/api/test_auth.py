"""Start mode's auth: every route needs a login (or the signing key) except the open ones;
`weir dev` stays open."""

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.routing import Mount
from weir.app import create_app
from weir.platform.executor.signing import bearer_hash
from weir.platform.security import sessions
from weir.platform.settings import Settings

from tests.api.helpers import LOCAL, function, sync_body
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

OPEN = ("/health", "/health/", "/static/", "/webhooks/", "/login")


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(start_settings(tmp_path)), LOCAL, follow_redirects=False) as client:
        yield client


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def every_route(routes: list[Any], prefix: str = "") -> list[tuple[str, str]]:
    """(method, path) of every route, into included routers (newer FastAPI nests them)."""
    found: list[tuple[str, str]] = []
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            found += every_route(inner.routes, prefix + route.include_context.prefix)
        elif isinstance(route, Mount):
            found.append(("GET", prefix + route.path + "/app.css"))
        else:
            methods = sorted(getattr(route, "methods", None) or ())
            found += [(m, concrete(prefix + route.path)) for m in methods]
    return found


def is_open(path: str) -> bool:
    return path in OPEN or path.startswith(OPEN[1:4])


def test_every_route_but_the_open_ones_refuses_a_caller_without_credentials(
    secured: TestClient,
) -> None:
    routes = every_route(secured.app.routes)  # type: ignore[attr-defined]
    assert len(routes) > 20  # the walk really saw the app
    for method, path in routes:
        if is_open(path):
            continue
        # as an API client would send it, so a content-type refusal does not hide the answer
        resp = secured.request(method, path, headers={"content-type": "application/json"})
        where = f"{method} {path}"
        if resp.status_code in (302, 303, 307):
            assert resp.headers["location"].startswith("/login?next="), where
        else:
            assert resp.status_code == 401, f"{where} answered {resp.status_code}"


def test_the_open_routes_answer_without_credentials(secured: TestClient) -> None:
    assert secured.get("/health").status_code == 200
    assert secured.get("/static/app.css").status_code == 200
    assert secured.get("/login").status_code == 200
    # a webhook's source id and signature authenticate it: the route answers, not the login
    assert secured.post("/webhooks/x", content=b"{}").status_code == 404


def test_the_admin_token_opens_rest_and_graphql(secured: TestClient) -> None:
    auth = {"authorization": f"Bearer {TOKEN}"}
    assert secured.get("/v1/runs/nope", headers=auth).status_code == 404
    query = {"query": "{ functions { slug } }"}
    assert secured.post("/v0/gql", json=query, headers=auth).json() == {"data": {"functions": []}}
    wrong = {"authorization": "Bearer wrong"}
    assert secured.get("/v1/runs/nope", headers=wrong).status_code == 401


def test_basic_auth_opens_the_api_but_the_signing_key_does_not(secured: TestClient) -> None:
    assert secured.get("/v1/runs/nope", auth=(USER, PASSWORD)).status_code == 404
    assert secured.get("/v1/runs/nope", auth=(USER, "guess")).status_code == 401
    sdk = {"authorization": f"Bearer {bearer_hash(SIGNING_KEY)}"}
    refused = secured.get("/v1/runs/nope", headers=sdk)
    assert refused.status_code == 401
    assert "--admin-token" in refused.json()["error"]


@pytest.mark.parametrize(
    "bearer",
    [bearer_hash(SIGNING_KEY), SIGNING_KEY, SIGNING_KEY.removeprefix("signkey-prod-")],
)
def test_register_and_run_state_accept_the_signing_key_raw_or_hashed(
    secured: TestClient, bearer: str
) -> None:
    auth = {"authorization": f"Bearer {bearer}"}
    assert secured.post("/fn/register", json=sync_body(function("f")), headers=auth).json()["ok"]
    assert secured.get("/v0/runs/nope/batch", headers=auth).status_code == 404


@pytest.mark.parametrize("bearer", [None, "", bearer_hash("signkey-prod-" + "cd" * 32), TOKEN])
def test_register_refuses_anything_but_the_signing_key(
    secured: TestClient, bearer: str | None
) -> None:
    headers = {} if bearer is None else {"authorization": f"Bearer {bearer}"}
    resp = secured.post("/fn/register", json=sync_body(function("f")), headers=headers)
    assert resp.status_code == 401
    assert "signing key" in resp.json()["error"]
    assert secured.get("/v0/runs/x/actions", headers=headers).status_code == 401


def test_the_event_api_refuses_unknown_keys_and_takes_known_ones(secured: TestClient) -> None:
    refused = secured.post("/e/wrong", json={"name": "t/e"})
    assert refused.status_code == 401
    assert refused.json()["error"] == "Event key not found"
    assert secured.post(f"/e/{EVENT_KEY}", json={"name": "t/e"}).status_code == 200


def test_a_ui_page_redirects_to_the_login_which_sets_a_safe_session_cookie(
    secured: TestClient,
) -> None:
    first = secured.get("/events?name=a")
    assert first.status_code == 303
    assert first.headers["location"] == "/login?next=%2Fevents%3Fname%3Da"
    assert login(secured) == "/events"
    assert secured.cookies.get(sessions.COOKIE)
    assert secured.get("/events").status_code == 200
    assert secured.get("/ui/api/runs").status_code == 200


def test_the_session_cookie_is_http_only_and_same_site_lax(secured: TestClient) -> None:
    resp = secured.post("/login", data={"user": USER, "password": PASSWORD})
    set_cookie = resp.headers["set-cookie"].lower()
    assert "httponly" in set_cookie
    assert "samesite=lax" in set_cookie


def test_the_admin_token_also_logs_in_to_the_ui(secured: TestClient) -> None:
    resp = secured.post("/login", data={"user": "", "password": TOKEN})
    assert resp.status_code == 303


def test_a_wrong_password_is_refused_with_a_clear_page(secured: TestClient) -> None:
    resp = secured.post("/login", data={"user": USER, "password": "nope"})
    assert resp.status_code == 401
    assert "Wrong user name or password" in resp.text
    assert sessions.COOKIE not in resp.headers.get("set-cookie", "")


def test_login_never_redirects_off_site(secured: TestClient) -> None:
    for target in ("https://evil.example/", "//evil.example/x", "javascript:alert(1)"):
        assert login(secured, next=target) == "/runs"


def test_a_forged_cookie_is_not_a_session(secured: TestClient) -> None:
    secured.cookies.set(sessions.COOKIE, "eyJ1IjoiYWRtaW4ifQ.0000")
    assert secured.get("/runs").status_code == 303


def test_forms_need_the_pages_csrf_token(secured: TestClient) -> None:
    login(secured)
    token = csrf_of(secured.get("/events").text)
    event = {"name": "t/e", "payload": "{}"}
    refused = secured.post("/events/send", data=event)
    assert refused.status_code == 403
    assert "CSRF token" in refused.text
    assert secured.post("/events/send", data=event | {"csrf": "0" * 64}).status_code == 403
    sent = secured.post("/events/send", data=event | {"csrf": token})
    assert sent.status_code == 303
    assert "flash=" in sent.headers["location"]


def test_a_post_from_another_origin_is_refused_even_with_the_token(secured: TestClient) -> None:
    login(secured)
    token = csrf_of(secured.get("/events").text)
    data = {"name": "t/e", "payload": "{}", "csrf": token}
    resp = secured.post("/events/send", data=data, headers={"origin": "https://evil.example"})
    assert resp.status_code == 403


def test_logout_ends_the_session(secured: TestClient) -> None:
    login(secured)
    token = csrf_of(secured.get("/runs").text)
    assert secured.post("/logout", data={"csrf": token}).headers["location"] == "/login"
    assert secured.get("/runs").status_code == 303


def test_sessions_expire_and_die_with_a_changed_password() -> None:
    settings = Settings(signing_keys=("k",), admin_user="u", admin_password="p")
    secret = sessions.secret_of(settings)
    cookie = sessions.issue(secret, "u", now_ms=1000)
    assert sessions.read(secret, cookie, 1000 + sessions.LIFETIME_MS - 1) is not None
    assert sessions.read(secret, cookie, 1000 + sessions.LIFETIME_MS) is None
    changed = Settings(signing_keys=("k",), admin_user="u", admin_password="q")
    assert sessions.read(sessions.secret_of(changed), cookie, 1000) is None


def test_weir_dev_needs_no_login(client: TestClient) -> None:
    assert client.get("/runs").status_code == 200
    assert client.get("/v1/runs/nope").status_code == 404
    assert client.post("/fn/register", json=sync_body(function("f"))).json()["ok"]
    assert client.get("/login", follow_redirects=False).headers["location"] == "/runs"
