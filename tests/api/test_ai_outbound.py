"""step.ai.infer goes only where the operator allows: `weir start` never POSTs a model request
to loopback (IPv4, IPv6, an IPv4-mapped IPv6 form, a name resolving to loopback), even with
--allowed-app-hosts admitting the app, unless --allowed-ai-hosts names the host or network;
`weir dev` stays open. A key in the URL's user info is sent as Basic and is in nothing Weir
keeps or shows; header names go out as the app spelled them.

Weir runs in-process (TestClient); the app is the raw loopback server of evil_app.py, and the
"models" are raw loopback servers on 127.0.0.1 and ::1 that record what reaches them."""

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from weir.app import create_app
from weir.platform.cli import banner
from weir.platform.settings import Settings

from tests.api.evil_app import EvilApp, answer
from tests.api.evil_weir import SDK, SIGNING_KEY, Weir, evil_function
from tests.api.helpers import LOCAL, store_rows

ADMIN_TOKEN = "admin"


class Model:
    """A raw HTTP server on one loopback address: every request's header lines as sent (names
    in their own case) and body are kept, and it answers `{"echo": <body>}`."""

    def __init__(self, host: str) -> None:
        self.host = host
        self.requests: list[dict[str, Any]] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(asyncio.start_server(self._handle, self.host, 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()
        server.close()

    async def _handle(self, r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            await r.readline()
            names: list[str] = []
            headers: dict[str, str] = {}
            while (line := (await r.readline()).decode().strip()) != "":
                name, _, value = line.partition(":")
                names.append(name.strip())
                headers[name.strip().lower()] = value.strip()
            body = json.loads(await r.readexactly(int(headers.get("content-length", "0"))))
            self.requests.append({"names": names, "headers": headers, "body": body})
            out = json.dumps({"echo": body}).encode()
            w.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                + f"content-length: {len(out)}\r\n\r\n".encode()
                + out
            )
            await w.drain()
        w.close()

    @contextlib.contextmanager
    def running(self) -> Iterator["Model"]:
        self._thread.start()
        self._ready.wait(5)
        try:
            yield self
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)


def asking(url: str, headers: dict[str, str] | None = None) -> Any:
    """An app mode: its first answer is an AIGateway op to `url`; the next one returns the
    step's saved result (data or error) as the run's output."""

    async def mode(w: asyncio.StreamWriter, req: dict[str, Any], app: EvilApp) -> None:
        saved = req.get("steps", {}).get("ask")
        if saved is not None:
            await answer(w, 200, saved, key=app.key)
            return
        opts = {
            "type": "step.ai.infer",
            "url": url,
            "format": "anthropic",
            "auth_key": "sk-from-auth-key",
            "headers": headers or {},
            "body": {"model": "m", "messages": []},
        }
        op = {"op": "AIGateway", "id": "ask", "name": "ask", "displayName": "ask", "opts": opts}
        await answer(w, 206, [op], key=app.key)

    return mode


def settings(tmp_path: Path, *, dev: bool, **changes: Any) -> Settings:
    base: dict[str, Any] = {
        "database_url": f"sqlite:///{tmp_path}/weir.db",
        "sqlite_synchronous": "OFF",
        "dev": dev,
        "event_keys": ("key",),
        "signing_keys": (SIGNING_KEY,),
        "admin_token": ADMIN_TOKEN,
        "retry_delay_ms": 20,
        "allowed_app_hosts": ("127.0.0.1",),  # the app is admitted; that must not admit models
    }
    return Settings(**(base | changes))


@pytest.fixture(scope="module")
def v4() -> Iterator[Model]:
    with Model("127.0.0.1").running() as model:
        yield model


@pytest.fixture(scope="module")
def v6() -> Iterator[Model]:
    with Model("::1").running() as model:
        yield model


def run_asking(
    tmp_path: Path, url: str, *, dev: bool, headers: dict[str, str] | None = None, **changes: Any
) -> tuple[dict[str, Any], TestClient]:
    evil = EvilApp(SIGNING_KEY, {"ask": asking(url, headers)})
    with (
        evil.running(),
        TestClient(create_app(settings(tmp_path, dev=dev, **changes)), LOCAL) as client,
    ):
        weir = Weir(client, evil)
        body = {
            "appname": "evil",
            "url": evil.url("ask"),
            "sdk": "evil:v0",
            "v": "0.1",
            "deploy_type": "ping",
            "functions": [evil_function(evil.url("ask"), "ask", 0)],
        }
        assert client.post("/fn/register", json=body, headers=SDK).status_code == 200
        run = weir.finished(weir.start("ask"))
        rows = store_rows(client, "SELECT * FROM steps") + store_rows(client, "SELECT * FROM runs")
        run["_stored"] = repr(rows)
        run["_shown"] = client.get(f"/v1/runs/{run['run_id']}", headers=ADMIN).text
        return run, client


ADMIN = {"authorization": f"Bearer {ADMIN_TOKEN}"}


def loopback_urls(v4: Model, v6: Model) -> dict[str, tuple[str, Model]]:
    return {
        "v4": (f"http://127.0.0.1:{v4.port}/v1/messages", v4),
        "v6": (f"http://[::1]:{v6.port}/v1/messages", v6),
        "mapped": (f"http://[::ffff:127.0.0.1]:{v4.port}/v1/messages", v4),
        "name": (f"http://localhost:{v4.port}/v1/messages", v4),  # resolved, then refused
    }


@pytest.mark.parametrize("where", ["v4", "v6", "mapped", "name"])
def test_weir_start_never_calls_a_loopback_model(
    tmp_path: Path, v4: Model, v6: Model, where: str
) -> None:
    url, model = loopback_urls(v4, v6)[where]
    before = len(model.requests)
    run, _ = run_asking(tmp_path, url, dev=False)
    assert len(model.requests) == before, "the loopback model was called"
    assert run["status"] == "Completed", run  # the op's error is the step's, the app returns it
    error = run["output"]["error"]
    assert error["name"] == "AIHostNotAllowed", error
    assert "--allowed-ai-hosts" in error["message"] and "loopback" in error["message"]


@pytest.mark.parametrize("where", ["v4", "v6", "name"])
def test_weir_dev_calls_a_loopback_model(tmp_path: Path, v4: Model, v6: Model, where: str) -> None:
    url, model = loopback_urls(v4, v6)[where]
    before = len(model.requests)
    run, _ = run_asking(tmp_path, url, dev=True)
    assert len(model.requests) == before + 1
    assert run["output"]["data"]["echo"] == {"model": "m", "messages": []}


@pytest.mark.parametrize(
    ("allowed", "where"),
    [(("127.0.0.0/8",), "v4"), (("::1",), "v6"), (("localhost",), "name"), (("127.0.0.1",), "v4")],
)
def test_allowed_ai_hosts_admits_a_named_host_or_network(
    tmp_path: Path, v4: Model, v6: Model, allowed: tuple[str, ...], where: str
) -> None:
    url, model = loopback_urls(v4, v6)[where]
    before = len(model.requests)
    run, _ = run_asking(tmp_path, url, dev=False, allowed_ai_hosts=allowed)
    assert len(model.requests) == before + 1, run
    assert run["output"]["data"]["echo"]["model"] == "m"


def test_a_network_admits_only_its_addresses(tmp_path: Path, v4: Model, v6: Model) -> None:
    url, model = loopback_urls(v4, v6)["v6"]
    before = len(model.requests)
    run, _ = run_asking(tmp_path, url, dev=False, allowed_ai_hosts=("127.0.0.0/8",))
    assert len(model.requests) == before
    assert run["output"]["error"]["name"] == "AIHostNotAllowed"
    assert "127.0.0.0/8" in run["output"]["error"]["message"]


def test_a_key_in_the_urls_user_info_is_sent_as_basic_and_never_kept_or_shown(
    tmp_path: Path, v4: Model
) -> None:
    url = f"http://proxyuser:sk-userinfo-secret@127.0.0.1:{v4.port}/v1/messages?key=sk-query"
    before = len(v4.requests)
    run, _ = run_asking(tmp_path, url, dev=True)
    (request,) = v4.requests[before:]
    assert request["headers"]["authorization"] == "Basic cHJveHl1c2VyOnNrLXVzZXJpbmZvLXNlY3JldA=="
    for secret in ("sk-userinfo-secret", "sk-query", "sk-from-auth-key"):
        assert secret not in run["_shown"], f"GET /v1/runs/{{id}} shows {secret}"
        assert secret not in run["_stored"], f"the store keeps {secret}"
    (span,) = [h for h in run["history"] if h["kind"] == "ai"]
    assert span["detail"]["url"] == f"http://127.0.0.1:{v4.port}/v1/messages"


@pytest.mark.parametrize("allowed", [("127.0.0.1",), ("127.0.0.0/8",)])  # lean path, aiohttp
def test_header_names_go_out_as_the_app_spelled_them(
    tmp_path: Path, v4: Model, allowed: tuple[str, ...]
) -> None:
    url, _ = loopback_urls(v4, v4)["v4"]
    before = len(v4.requests)
    headers = {"X-Api-Key": "sk-app", "Anthropic-Version": "2023-06-01", "X-Trace-ID": "t1"}
    run_asking(tmp_path, url, dev=False, headers=headers, allowed_ai_hosts=allowed)
    (request,) = v4.requests[before:]
    names = request["names"]
    assert "Anthropic-Version" in names and "X-Trace-ID" in names, names
    # the format's key replaces the app's header of that name, spelled as the app spelled it
    assert "X-Api-Key" in names and "x-api-key" not in names, names
    assert request["headers"]["x-api-key"] == "sk-from-auth-key"


def test_the_banner_says_where_model_requests_may_go(tmp_path: Path) -> None:
    start = banner.facts(settings(tmp_path, dev=False), [])
    assert "public addresses only" in start["ai_calls"]
    assert "AI calls  public addresses only" in "\n".join(banner.text_lines(start))
    dev = banner.facts(settings(tmp_path, dev=True), [])
    assert "any host" in dev["ai_calls"] and "loopback" in dev["ai_calls"]
    listed = banner.facts(settings(tmp_path, dev=False, allowed_ai_hosts=("llm.internal",)), [])
    assert listed["ai_calls"].startswith("only llm.internal")
