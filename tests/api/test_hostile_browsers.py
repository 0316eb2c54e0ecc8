"""A web page can't drive Weir through its visitor's browser: against the real `weir dev` on
loopback, the requests a page can make without a CORS preflight (text/plain and form posts,
`Origin: null`, a DNS-rebound Host) are refused, while SDK-style JSON calls and the UI's own
same-origin form posts still work. Every answer carries the security headers."""

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.security import sessions

from tests.api.helpers import LOCAL, function, sync_body
from tests.api.start_mode import PASSWORD, USER, start_settings
from tests.integration.harness import WeirServer

EVENT = b'{"name": "t/e", "data": {}}'


@pytest.fixture(scope="module")
def weir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WeirServer]:
    server = WeirServer(tmp_path_factory.mktemp("hostile"))
    server.env["WEIR_ALLOWED_HOSTS"] = "weir.example.com"
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("path", ["/e/dev", "/fn/register", "/v0/gql"])
@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None],
)
def test_json_endpoints_refuse_what_a_page_can_post_without_a_preflight(
    weir: WeirServer, path: str, content_type: str | None
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    resp = httpx.post(weir.url + path, content=EVENT, headers=headers)
    assert resp.status_code == 415, resp.text
    assert "application/json" in resp.json()["error"]


def test_sdk_style_json_calls_still_work(weir: WeirServer) -> None:
    sent = httpx.post(weir.url + "/e/dev", json={"name": "t/e", "data": {}})
    assert sent.status_code == 200, sent.text
    typed = httpx.post(
        weir.url + "/e/dev",
        content=EVENT,
        headers={"content-type": "application/json; charset=utf-8"},
    )
    assert typed.status_code == 200, typed.text
    synced = httpx.post(weir.url + "/fn/register", json=sync_body(function("a")))
    assert synced.status_code == 200, synced.text


@pytest.mark.parametrize(
    "origin", ["null", "https://evil.example", "http://localhost:3000", "http://127.0.0.1:1"]
)
def test_a_post_from_a_foreign_origin_is_refused(weir: WeirServer, origin: str) -> None:
    for path, kwargs in (
        ("/e/dev", {"json": {"name": "t/e"}}),
        ("/fn/register", {"json": sync_body(function("b"))}),
        ("/events/send", {"data": {"name": "t/e", "payload": "{}"}}),
        ("/apps/sync", {"data": {"url": "http://127.0.0.1:1/api/inngest"}}),
    ):
        resp = httpx.post(weir.url + path, headers={"origin": origin}, **kwargs)  # type: ignore[arg-type]
        assert resp.status_code == 403, (path, origin, resp.status_code)


def test_a_cross_site_fetch_without_origin_is_refused(weir: WeirServer) -> None:
    resp = httpx.post(
        weir.url + "/e/dev", json={"name": "t/e"}, headers={"sec-fetch-site": "cross-site"}
    )
    assert resp.status_code == 403


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8288", "rebind.attacker.test"])
def test_a_dns_rebound_host_is_refused_even_for_reads(weir: WeirServer, host: str) -> None:
    for path in ("/runs", "/v1/runs/x", "/health"):
        resp = httpx.get(weir.url + path, headers={"host": host})
        assert resp.status_code == 400, (path, host)
        assert "--allowed-hosts" in resp.json()["error"]
    posted = httpx.post(weir.url + "/e/dev", json={"name": "t/e"}, headers={"host": host})
    assert posted.status_code == 400


@pytest.mark.parametrize(
    "host", ["localhost", "127.0.0.1", "[::1]:8288", "weir.example.com", "app.localhost:9"]
)
def test_loopback_names_ip_literals_and_listed_hosts_are_answered(
    weir: WeirServer, host: str
) -> None:
    assert httpx.get(weir.url + "/health/live", headers={"host": host}).status_code == 200


def test_the_uis_own_same_origin_form_post_works(weir: WeirServer) -> None:
    origin = weir.url
    headers = {"origin": origin, "sec-fetch-site": "same-origin"}
    data = {"name": "t/ui", "payload": '{"a": 1}'}
    resp = httpx.post(weir.url + "/events/send", data=data, headers=headers)
    assert resp.status_code == 303, resp.text
    assert resp.headers["location"].startswith("/events?flash=")


def test_a_listed_front_name_may_post_when_a_proxy_rewrites_host(weir: WeirServer) -> None:
    headers = {"origin": "https://weir.example.com"}
    resp = httpx.post(weir.url + "/e/dev", json={"name": "t/e"}, headers=headers)
    assert resp.status_code == 200, resp.text


@pytest.mark.parametrize("path", ["/runs", "/health/live", "/static/app.css", "/nope", "/e/dev"])
def test_every_answer_carries_the_security_headers(weir: WeirServer, path: str) -> None:
    headers = httpx.get(weir.url + path).headers
    csp = headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert headers["x-frame-options"] == "DENY"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"


def test_refusals_carry_them_too(weir: WeirServer) -> None:
    resp = httpx.get(weir.url + "/runs", headers={"host": "evil.example"})
    assert resp.headers["x-frame-options"] == "DENY"


def test_start_mode_refuses_a_rebound_host_before_asking_for_a_login(tmp_path: Path) -> None:
    settings = start_settings(tmp_path)
    with TestClient(create_app(settings), LOCAL, follow_redirects=False) as client:
        rebound = client.get("/runs", headers={"host": "evil.example"})
        assert rebound.status_code == 400
        foreign = client.post(
            "/login", data={"user": USER, "password": PASSWORD}, headers={"origin": "null"}
        )
        assert foreign.status_code == 403 and sessions.COOKIE not in foreign.cookies
        assert client.get("/runs").status_code == 303  # to the login page, as before
