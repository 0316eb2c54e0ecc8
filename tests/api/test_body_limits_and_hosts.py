"""Request bodies are capped before parsing, and the app-host allow-list guards every way an
app URL gets in: `-u`/the UI's sync (the PUT is never sent) and the register payload."""

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.api.events import MAX_BODY
from weir.platform.api.gql import MAX_QUERY_BYTES
from weir.platform.api.register import MAX_REGISTER_BYTES
from weir.platform.executor import app_hosts
from weir.platform.security.budget import CAPS, BodyClass
from weir.platform.settings import Settings

from tests.api.helpers import LOCAL, function, sync_body

JSON = {"content-type": "application/json"}


def chunks(total: int, size: int = 1024 * 1024) -> Iterator[bytes]:
    """A body sent chunked, with no Content-Length to check up front."""
    sent = 0
    while sent < total:
        yield b" " * min(size, total - sent)
        sent += size


@pytest.mark.parametrize(
    ("path", "cap"),
    [("/e/key", MAX_BODY), ("/fn/register", MAX_REGISTER_BYTES), ("/v0/gql", MAX_QUERY_BYTES)],
)
def test_an_oversized_body_is_refused_before_parsing(
    client: TestClient, path: str, cap: int
) -> None:
    declared = client.post(path, content=b"{}", headers=JSON | {"content-length": str(cap + 1)})
    assert declared.status_code == 413
    streamed = client.post(path, content=chunks(cap + 1), headers=JSON)
    assert streamed.status_code == 413
    text = streamed.text
    assert f"larger than {cap} bytes" in text and "MiB" in text


def test_a_body_just_under_the_cap_is_parsed(client: TestClient) -> None:
    padding = " " * (MAX_QUERY_BYTES - 100)
    query = b'{"query": "{ functions { slug } }"}'
    resp = client.post("/v0/gql", content=query + padding.encode(), headers=JSON)
    assert resp.status_code == 200


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(
        database_url=f"sqlite:///{tmp_path}/weir.db",
        sqlite_synchronous="OFF",
        allowed_app_hosts=("127.0.0.1:1", "*.apps.internal"),
    )
    with TestClient(create_app(settings), LOCAL, follow_redirects=False) as client:
        yield client


def test_a_register_from_an_allowed_host_is_accepted(guarded: TestClient) -> None:
    assert guarded.post("/fn/register", json=sync_body(function("a"))).json()["ok"]


def test_a_register_naming_another_host_is_refused(guarded: TestClient) -> None:
    body = sync_body(function("a")) | {"url": "http://169.254.169.254/latest"}
    resp = guarded.post("/fn/register", json=body)
    assert resp.status_code == 400
    assert "'169.254.169.254'" in resp.json()["error"]
    assert "--allowed-app-hosts" in resp.json()["error"]


def test_a_function_url_on_another_host_is_refused(guarded: TestClient) -> None:
    fn = function("a")
    fn["steps"]["step"]["runtime"]["url"] = "http://10.0.0.9:8000/api/inngest?fnId=a"
    resp = guarded.post("/fn/register", json=sync_body(fn))
    assert resp.status_code == 400
    assert resp.json()["problems"] == [
        app_hosts.url_problem(
            "http://10.0.0.9:8000/api/inngest?fnId=a", ("127.0.0.1:1", "*.apps.internal")
        )
    ]


def test_the_ui_sync_of_a_disallowed_url_says_why_without_calling_it(guarded: TestClient) -> None:
    resp = guarded.post("/apps/sync", data={"url": "http://evil.example:9/api/inngest"})
    assert resp.status_code == 303
    note = unquote(resp.headers["location"])
    assert "'evil.example'" in note and "--allowed-app-hosts" in note


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("http://127.0.0.1:8000/api", ("127.0.0.1",)),
        ("http://127.0.0.1:8000/api", ("127.0.0.1:8000",)),
        ("https://app.example.com/api", ("app.example.com:443",)),
        ("http://a.b.apps.internal/x", ("*.apps.internal",)),
        ("http://APP.Example.com/x", ("app.example.com",)),
        ("http://[::1]:3000/x", ("[::1]",)),
        ("http://anything/x", ()),
    ],
)
def test_allowed_urls(url: str, allowed: tuple[str, ...]) -> None:
    assert app_hosts.url_problem(url, allowed) is None


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:9000/api", "does not allow"),
        ("http://apps.internal.evil.com/x", "does not allow"),
        ("http://evilapps.internal/x", "does not allow"),
        ("file:///etc/passwd", "http(s) URL"),
        ("http://127.0.0.1:99999/x", "not a valid URL"),
    ],
)
def test_refused_urls(url: str, why: str) -> None:
    problem = app_hosts.url_problem(url, ("127.0.0.1:8000", "*.apps.internal"))
    assert problem is not None and why in problem


@pytest.mark.parametrize(
    "payload", [None, [], {"functions": True}, {"functions": [1, {"steps": 2}]}]
)
def test_odd_register_payloads_have_no_urls_to_refuse(payload: object) -> None:
    assert app_hosts.sync_problems(payload, ("127.0.0.1",)) == []


@pytest.mark.parametrize(
    ("path", "cap"), [("/login", CAPS[BodyClass.LOGIN]), ("/events/send", CAPS[BodyClass.FORM])]
)
def test_a_form_past_its_class_cap_is_refused_saying_so(
    client: TestClient, path: str, cap: int
) -> None:
    form = {"content-type": "application/x-www-form-urlencoded"}
    declared = client.post(path, content=b"a=b", headers=form | {"content-length": str(cap + 1)})
    streamed = client.post(path, content=chunks(cap + 1, 4096), headers=form)
    for resp in (declared, streamed):
        assert resp.status_code == 413
        assert f"larger than the {cap} bytes Weir accepts here" in resp.json()["error"]
