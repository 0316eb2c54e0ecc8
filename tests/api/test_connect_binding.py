"""Which apps a Connect worker may serve (connect/binding.py), in-process with the official
SDK's protobuf classes: what a worker may never take from HTTP (an app, a function, a call
URL), an HTTP sync of an app bound to Connect, a worker's messages bound to its own apps'
calls, and Connect off in `weir start` until apps are named. (Real workers of the official
SDK over loopback are in tests/integration/test_connect.py.)"""

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from inngest.connect._internal import connect_pb2 as pb
from starlette.testclient import WebSocketTestSession
from weir.app import create_app
from weir.platform.connect import binding
from weir.platform.executor.signing import bearer_hash
from weir.platform.settings import Settings

from tests.api.helpers import LOCAL, function, sync_body
from tests.api.start_mode import SIGNING_KEY, TOKEN, start_settings
from tests.api.test_connect_api import (
    KIND,
    _closed,
    _next_request,
    _run,
    message,
    receive,
    start,
)

SIGNED = {"authorization": f"Bearer {bearer_hash(SIGNING_KEY)}"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(database_url=f"sqlite:///{tmp_path}/weir.db", sqlite_synchronous="OFF")
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        yield test_client


def worker_function(
    app: str, fn_id: str, url: str | None = None, event: str = "t/e"
) -> dict[str, Any]:
    fn = function(fn_id, event) | {"id": f"{app}-{fn_id}"}
    where = url or f"wss://connect?fnId={app}-{fn_id}"
    fn["steps"]["step"]["runtime"] = {"type": "ws", "url": where}
    return fn


def hello(session: pb.StartResponse, app: str, functions: list[dict[str, Any]]) -> bytes:
    data = pb.WorkerConnectRequestData(
        connection_id=session.connection_id,
        instance_id=f"{app}-worker",
        auth_data=pb.AuthData(session_token=session.session_token),
        apps=[pb.AppConfiguration(app_name=app, functions=json.dumps(functions).encode())],
        framework="connect",
        sdk_version="0.5.19",
        sdk_language="py",
    )
    return message(KIND.WORKER_CONNECT, data)


def refused(
    client: TestClient, app: str, functions: list[dict[str, Any]], **headers: str
) -> tuple[str, str]:
    """Connect a worker of `app`; the text of the SYNC_FAILED that refuses it, and the reason
    of the close that follows."""
    session = start(client, **headers)
    with client.websocket_connect(session.gateway_endpoint) as ws:
        assert receive(ws).kind == KIND.GATEWAY_HELLO
        ws.send_bytes(hello(session, app, functions))
        failed = receive(ws)
        assert failed.kind == KIND.SYNC_FAILED, failed
        closed = _closed(ws)
    assert closed.code == 1008
    return failed.payload.decode(), closed.reason


@contextlib.contextmanager
def worker(client: TestClient, app: str, *fn_ids: str) -> Iterator[WebSocketTestSession]:
    session = start(client)
    with client.websocket_connect(session.gateway_endpoint) as ws:
        receive(ws)
        functions = [worker_function(app, fn_id, event=f"{app}/e") for fn_id in fn_ids]
        ws.send_bytes(hello(session, app, functions))
        assert receive(ws).kind == KIND.GATEWAY_CONNECTION_READY
        yield ws


def test_a_worker_s_function_is_called_over_its_socket_only(client: TestClient) -> None:
    """A function URL a worker registers would be called over HTTP, outside
    --allowed-app-hosts: refused, and nothing of the app is registered."""
    internal = "http://169.254.169.254/latest?fnId=app-job&stepId=step"
    text, _ = refused(client, "app", [worker_function("app", "job", url=internal)])
    assert "function 'app-job', option 'url'" in text
    assert "called over its socket" in text
    assert "app-job" not in client.get("/functions").text


def test_a_worker_does_not_take_a_function_another_app_holds(client: TestClient) -> None:
    synced = client.post("/fn/register", json=sync_body(function("job")))  # app "app", HTTP
    assert synced.status_code == 200, synced.text
    other = worker_function("other", "job") | {"id": "app-job"}  # the HTTP app's function
    text, _ = refused(client, "other", [other])
    assert "function 'app-job', option 'id': another app holds a function of this id" in text
    query = {"query": "{ functions { slug url } }"}
    functions = client.post("/v0/gql", json=query).json()["data"]["functions"]
    [held] = [f for f in functions if f["slug"] == "app-job"]
    assert held["url"].startswith("http://")  # still the HTTP app's


def test_a_worker_retrying_a_refused_connect_is_logged_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = start_settings(tmp_path, connect_apps=("app",))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        for _ in range(3):  # as the SDK does, about once a second
            refused(client, "intruder", [worker_function("intruder", "job")], **SIGNED)
    lines = [r.getMessage() for r in caplog.records if r.name == "weir.connect"]
    said = [line for line in lines if "'intruder' may not be served" in line]
    assert len(said) == 1, lines
    assert said[0].startswith("refused a Connect worker (logged once a minute): the app")


def test_a_worker_refused_one_of_its_apps_registers_none(tmp_path: Path) -> None:
    settings = start_settings(tmp_path, connect_apps=("app",))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        session = start(client, **SIGNED)
        apps = [
            pb.AppConfiguration(app_name=name, functions=json.dumps([fn]).encode())
            for name, fn in (
                ("app", worker_function("app", "job")),
                ("intruder", worker_function("intruder", "job")),
            )
        ]
        data = pb.WorkerConnectRequestData(
            connection_id=session.connection_id,
            instance_id="two-apps",
            auth_data=pb.AuthData(session_token=session.session_token),
            apps=apps,
        )
        with client.websocket_connect(session.gateway_endpoint) as ws:
            receive(ws)
            ws.send_bytes(message(KIND.WORKER_CONNECT, data))
            failed = receive(ws)
            assert failed.kind == KIND.SYNC_FAILED and b"'intruder'" in failed.payload
            assert _closed(ws).code == 1008
        page = client.get("/functions", headers={"authorization": f"Bearer {TOKEN}"}).text
    assert "app-job" not in page and "intruder-job" not in page


def test_a_worker_reconnecting_keeps_its_own_functions(client: TestClient) -> None:
    with worker(client, "app", "job"):
        pass
    with worker(client, "app", "job"):  # the same app's functions: not another app's
        assert "app-job" in client.get("/functions").text


def test_a_worker_s_messages_act_only_on_its_own_apps_calls(client: TestClient) -> None:
    with worker(client, "app", "job") as mine, worker(client, "bee", "other") as theirs:
        event_id = client.post("/e/key", json={"name": "app/e"}).json()["ids"][0]
        request = _next_request(mine)
        # another app's worker that learned the request id acts on the call: ignored
        ack = pb.WorkerRequestAckData(request_id=request.request_id)
        theirs.send_bytes(message(KIND.WORKER_REQUEST_ACK, ack))
        extend = pb.WorkerRequestExtendLeaseData(
            request_id=request.request_id, lease_id=request.lease_id
        )
        theirs.send_bytes(message(KIND.WORKER_REQUEST_EXTEND_LEASE, extend))
        lease = pb.WorkerRequestExtendLeaseAckData()
        lease.ParseFromString(receive(theirs).payload)
        assert not lease.HasField("new_lease_id")  # no lease of a call not its app's
        forged = pb.SDKResponse(
            request_id=request.request_id, status=pb.SDKResponseStatus.DONE, body=b'"forged"'
        )
        theirs.send_bytes(message(KIND.WORKER_REPLY, forged))
        assert receive(theirs).kind == KIND.WORKER_REPLY_ACK
        # the call's own worker answers it
        mine.send_bytes(message(KIND.WORKER_REQUEST_ACK, ack))
        reply = pb.SDKResponse(
            request_id=request.request_id, status=pb.SDKResponseStatus.DONE, body=b'"mine"'
        )
        mine.send_bytes(message(KIND.WORKER_REPLY, reply))
        run = _run(client, event_id)
    assert run["status"] == "Completed" and run["output"] == "mine"


def test_weir_start_without_connect_apps_refuses_every_worker_at_start(tmp_path: Path) -> None:
    with TestClient(create_app(start_settings(tmp_path)), base_url=LOCAL) as client:
        resp = client.post("/v0/connect/start", content=b"", headers=SIGNED)
    assert resp.status_code == 403
    assert resp.json()["error"] == (
        "Connect is off: weir start admits Connect workers only for the apps named in "
        "--connect-apps (WEIR_CONNECT_APPS), and it names none"
    )


def test_weir_start_serves_over_connect_the_apps_it_names_only(tmp_path: Path) -> None:
    settings = start_settings(tmp_path, connect_apps=("app",))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        text, reason = refused(client, "intruder", [worker_function("intruder", "job")], **SIGNED)
        assert text == (
            "the app 'intruder' may not be served by a Connect worker: --connect-apps names "
            "only app; add it there to let its workers connect"
        )
        assert reason.startswith("the app 'intruder' may not be served by a Connect worker")
        session = start(client, **SIGNED)
        with client.websocket_connect(session.gateway_endpoint) as ws:
            receive(ws)
            ws.send_bytes(hello(session, "app", [worker_function("app", "job")]))
            assert receive(ws).kind == KIND.GATEWAY_CONNECTION_READY
        # the app is the Connect workers': an HTTP sync of it is refused
        over_http = client.post("/fn/register", json=sync_body(function("job")), headers=SIGNED)
        assert over_http.status_code == 400
        assert (
            "the app 'app' is served by Connect workers (--connect-apps)"
            in (over_http.json()["error"])
        )
        page = client.get("/functions", headers={"authorization": f"Bearer {TOKEN}"}).text
    assert "intruder-job" not in page and "app-job" in page


@pytest.mark.parametrize(
    ("configured", "dev", "named", "any_name"),
    [
        ((), True, set(), True),  # weir dev: any app name
        ((), False, set(), False),  # weir start: none until named
        (("*",), False, set(), True),
        (("a", "b"), True, {"a", "b"}, False),  # named in dev too: only those
    ],
)
def test_the_connect_apps_policy_and_its_defaults(
    configured: tuple[str, ...], dev: bool, named: set[str], any_name: bool
) -> None:
    apps = binding.policy(configured, dev=dev)
    assert (set(apps.named), apps.any_name) == (named, any_name)


@pytest.mark.parametrize(
    ("configured", "says"),
    [
        (("*", "a"), "'*' admits every app name; drop the names beside it (a)"),
        (("x" * 256,), "is not an app name (at most 255 characters"),
        (("bad\nname",), "no control characters"),
    ],
)
def test_a_bad_connect_apps_list_is_refused(configured: tuple[str, ...], says: str) -> None:
    with pytest.raises(ValueError, match="--connect-apps") as bad:
        binding.policy(configured, dev=False)
    assert says in str(bad.value)
