"""Connect's HTTP and WebSocket endpoints in-process, the test playing the worker with the
official SDK's own protobuf classes: the handshake, what is refused and why, heartbeats,
leases and replies no call waits for. (Calls carried end to end by a real SDK worker are in
tests/integration/test_connect.py.)"""

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from inngest.connect._internal import connect_pb2 as pb
from starlette.testclient import WebSocketDenialResponse, WebSocketTestSession
from starlette.websockets import WebSocketDisconnect
from weir.app import create_app
from weir.platform.connect.wire import MAX_FIELDS
from weir.platform.executor.http.client import AppClient
from weir.platform.executor.signing import bearer_hash
from weir.platform.executor.sync_request import request_sync
from weir.platform.settings import Settings

from tests.api.helpers import LOCAL, function
from tests.api.start_mode import SIGNING_KEY, start_settings

PROTOCOL = "v0.connect.inngest.com"
KIND = pb.GatewayMessageType


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(database_url=f"sqlite:///{tmp_path}/weir.db", sqlite_synchronous="OFF")
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        yield test_client


def start(client: TestClient, **headers: str) -> pb.StartResponse:
    resp = client.post(
        "/v0/connect/start",
        content=pb.StartRequest().SerializeToString(),
        headers={"content-type": "application/protobuf", **headers},
    )
    assert resp.status_code == 200, resp.text
    parsed = pb.StartResponse()
    parsed.ParseFromString(resp.content)
    return parsed


def gateway_path(session: pb.StartResponse) -> str:
    """Where the start told the worker to open its socket (the session in the query)."""
    return session.gateway_endpoint


def message(kind: int, payload: Any = None) -> bytes:
    raw = b"" if payload is None else payload.SerializeToString()
    return pb.ConnectMessage(kind=kind, payload=raw).SerializeToString()


def receive(ws: WebSocketTestSession) -> pb.ConnectMessage:
    parsed = pb.ConnectMessage()
    parsed.ParseFromString(ws.receive_bytes())
    return parsed


def hello(session: pb.StartResponse, functions: list[dict[str, Any]]) -> bytes:
    data = pb.WorkerConnectRequestData(
        connection_id=session.connection_id,
        instance_id="test-worker",
        auth_data=pb.AuthData(session_token=session.session_token),
        apps=[pb.AppConfiguration(app_name="app", functions=json.dumps(functions).encode())],
        framework="connect",
        sdk_version="0.5.19",
        sdk_language="py",
    )
    return message(KIND.WORKER_CONNECT, data)


def connect_function(fn_id: str) -> dict[str, Any]:
    fn = function(fn_id)
    fn["steps"]["step"]["runtime"] = {"type": "ws", "url": f"wss://connect?fnId=app-{fn_id}"}
    return fn


def test_start_hands_out_a_session_and_the_gateway_address(client: TestClient) -> None:
    session = start(client)
    assert session.gateway_endpoint == (
        f"ws://localhost/v0/connect/gateway?session={session.session_token}"
    )
    assert session.connection_id and session.session_token
    assert start(client).session_token != session.session_token


def test_a_start_request_that_is_not_protobuf_is_refused(client: TestClient) -> None:
    resp = client.post("/v0/connect/start", content=b"\x0b", headers={"content-type": "x/y"})
    assert resp.status_code == 400
    assert "not a StartRequest" in resp.json()["error"]


def test_a_worker_connects_syncs_and_is_answered(client: TestClient) -> None:
    session = start(client)
    with client.websocket_connect(gateway_path(session), subprotocols=[PROTOCOL]) as ws:
        assert ws.accepted_subprotocol == PROTOCOL
        assert receive(ws).kind == KIND.GATEWAY_HELLO
        ws.send_bytes(hello(session, [connect_function("job")]))
        ready = receive(ws)
        assert ready.kind == KIND.GATEWAY_CONNECTION_READY
        intervals = pb.GatewayConnectionReadyData()
        intervals.ParseFromString(ready.payload)
        assert (intervals.heartbeat_interval, intervals.extend_lease_interval) == ("10s", "5s")
        assert "app-job" in client.get("/functions").text  # synced like an HTTP app

        ws.send_bytes(message(KIND.WORKER_HEARTBEAT))
        assert receive(ws).kind == KIND.GATEWAY_HEARTBEAT

        # a lease of no call Weir waits for is not renewed: the worker drops that call
        extend = pb.WorkerRequestExtendLeaseData(request_id="gone", lease_id="l1")
        ws.send_bytes(message(KIND.WORKER_REQUEST_EXTEND_LEASE, extend))
        ack = receive(ws)
        assert ack.kind == KIND.WORKER_REQUEST_EXTEND_LEASE_ACK
        lease = pb.WorkerRequestExtendLeaseAckData()
        lease.ParseFromString(ack.payload)
        assert lease.request_id == "gone" and not lease.HasField("new_lease_id")

        # a reply nothing waits for is acknowledged all the same, so the worker forgets it
        ws.send_bytes(message(KIND.WORKER_REPLY, pb.SDKResponse(request_id="late")))
        reply_ack = receive(ws)
        assert reply_ack.kind == KIND.WORKER_REPLY_ACK
        parsed = pb.WorkerReplyAckData()
        parsed.ParseFromString(reply_ack.payload)
        assert parsed.request_id == "late"


def _closed(ws: WebSocketTestSession) -> WebSocketDisconnect:
    """How the server closed the socket (any frames before the close are read past)."""
    while True:
        try:
            ws.receive_bytes()
        except WebSocketDisconnect as closed:
            return closed


def test_a_session_token_is_good_for_one_socket(client: TestClient) -> None:
    session = start(client)
    with client.websocket_connect(gateway_path(session)) as ws:
        receive(ws)
        ws.send_bytes(hello(session, [connect_function("job")]))
        assert receive(ws).kind == KIND.GATEWAY_CONNECTION_READY
    with pytest.raises(WebSocketDenialResponse) as refused:
        client.websocket_connect(gateway_path(session)).__enter__()
    assert refused.value.status_code == 401
    assert "call /v0/connect/start first" in refused.value.json()["error"]


@pytest.mark.parametrize("query", ["", "?session=made-up"])
def test_a_socket_without_a_session_is_refused_before_any_frame(
    client: TestClient, query: str
) -> None:
    with pytest.raises(WebSocketDenialResponse) as refused:
        client.websocket_connect(f"ws://localhost/v0/connect/gateway{query}").__enter__()
    assert refused.value.status_code == 401
    assert "call /v0/connect/start first" in refused.value.json()["error"]


def test_the_first_message_must_name_the_socket_s_session(client: TestClient) -> None:
    session, other = start(client), start(client)
    with client.websocket_connect(gateway_path(session)) as ws:
        receive(ws)
        ws.send_bytes(hello(other, [connect_function("job")]))
        closed = _closed(ws)
    assert closed.code == 1008 and "another session" in closed.reason


def test_the_first_message_must_be_worker_connect(client: TestClient) -> None:
    with client.websocket_connect(gateway_path(start(client))) as ws:
        receive(ws)
        ws.send_bytes(message(KIND.WORKER_HEARTBEAT))
        closed = _closed(ws)
    assert closed.code == 1002 and "expected WORKER_CONNECT" in closed.reason


def test_a_message_of_too_many_fields_is_refused_unparsed(client: TestClient) -> None:
    with client.websocket_connect(gateway_path(start(client))) as ws:
        receive(ws)
        ws.send_bytes(b"\x08\x01" * (MAX_FIELDS + 1))
        closed = _closed(ws)
    assert closed.code == 1002 and f"more than {MAX_FIELDS} fields" in closed.reason


def test_an_invalid_function_fails_the_sync_saying_why(client: TestClient) -> None:
    session = start(client)
    bad = connect_function("job") | {"triggers": []}
    with client.websocket_connect(gateway_path(session)) as ws:
        receive(ws)
        ws.send_bytes(hello(session, [bad]))
        failed = receive(ws)
        assert failed.kind == KIND.SYNC_FAILED
        assert b"trigger" in failed.payload
        closed = _closed(ws)
    assert closed.code == 1008 and "sync of app 'app' failed" in closed.reason
    assert "app-job" not in client.get("/functions").text


def test_a_flushed_reply_is_checked(client: TestClient) -> None:
    bad = client.post("/v0/connect/flush", content=b"\x12\x09abc")
    assert bad.status_code == 400 and "not an SDKResponse" in bad.json()["error"]
    late = pb.SDKResponse(request_id="nobody-waits").SerializeToString()
    assert client.post("/v0/connect/flush", content=late).status_code == 200


def test_start_mode_wants_the_signing_key(tmp_path: Path) -> None:
    settings = start_settings(tmp_path, connect_apps=("app",))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        refused = client.post("/v0/connect/start", content=b"")
        assert refused.status_code == 401
        flush = client.post("/v0/connect/flush", content=b"")
        assert flush.status_code == 401
        session = start(client, authorization=f"Bearer {bearer_hash(SIGNING_KEY)}")
        assert session.session_token


async def test_asking_a_connect_app_to_sync_says_how_it_syncs() -> None:
    client = AppClient()
    try:
        error = await request_sync(client, "wss://connect", Settings())
    finally:
        await client.close()
    assert error is not None and "restart the worker" in error


@contextlib.contextmanager
def ready_worker(client: TestClient, *fn_ids: str) -> Iterator[WebSocketTestSession]:
    """A worker's socket, past the handshake, serving `fn_ids`."""
    session = start(client)
    with client.websocket_connect(gateway_path(session)) as ws:
        receive(ws)
        ws.send_bytes(hello(session, [connect_function(fn_id) for fn_id in fn_ids]))
        assert receive(ws).kind == KIND.GATEWAY_CONNECTION_READY
        yield ws


def _next_request(ws: WebSocketTestSession) -> pb.GatewayExecutorRequestData:
    while True:  # heartbeats and the like may come first
        msg = receive(ws)
        if msg.kind == KIND.GATEWAY_EXECUTOR_REQUEST:
            request = pb.GatewayExecutorRequestData()
            request.ParseFromString(msg.payload)
            return request


def _run(client: TestClient, event_id: str) -> dict[str, Any]:
    for _ in range(200):
        runs = client.get(f"/v1/events/{event_id}/runs").json()["data"]
        if runs and runs[0]["status"] in ("Completed", "Failed", "Cancelled"):
            run: dict[str, Any] = client.get(f"/v1/runs/{runs[0]['run_id']}").json()["data"]
            return run
        time.sleep(0.05)
    raise AssertionError("the run did not end")


def test_a_call_goes_down_the_socket_and_its_reply_ends_the_run(client: TestClient) -> None:
    with ready_worker(client, "job") as ws:
        event_id = client.post("/e/key", json={"name": "t/e", "data": {"n": 3}}).json()["ids"][0]
        request = _next_request(ws)
        assert (request.app_name, request.function_slug, request.step_id) == (
            "app",
            "app-job",
            "step",
        )
        assert request.run_id and request.lease_id and request.job_id and request.app_id
        body = json.loads(request.request_payload)  # the HTTP request's body, as is
        assert body["event"]["data"] == {"n": 3}
        assert body["ctx"]["fn_id"] == request.function_id and body["ctx"]["attempt"] == 0

        ack = pb.WorkerRequestAckData(request_id=request.request_id)
        ws.send_bytes(message(KIND.WORKER_REQUEST_ACK, ack))
        extend = pb.WorkerRequestExtendLeaseData(
            request_id=request.request_id, lease_id=request.lease_id
        )
        ws.send_bytes(message(KIND.WORKER_REQUEST_EXTEND_LEASE, extend))
        lease = pb.WorkerRequestExtendLeaseAckData()
        lease.ParseFromString(receive(ws).payload)
        assert lease.HasField("new_lease_id") and lease.new_lease_id != request.lease_id
        stale = pb.WorkerRequestExtendLeaseData(
            request_id=request.request_id, lease_id=request.lease_id
        )  # the old lease is spent: only the newest one extends
        ws.send_bytes(message(KIND.WORKER_REQUEST_EXTEND_LEASE, stale))
        refused = pb.WorkerRequestExtendLeaseAckData()
        refused.ParseFromString(receive(ws).payload)
        assert not refused.HasField("new_lease_id")

        done = pb.SDKResponse(
            request_id=request.request_id,
            status=pb.SDKResponseStatus.DONE,
            body=b'{"tripled": 9}',
            sdk_version="0.5.19",
            request_version=2,
        )
        ws.send_bytes(message(KIND.WORKER_REPLY, done))
        assert receive(ws).kind == KIND.WORKER_REPLY_ACK
        run = _run(client, event_id)
    assert run["status"] == "Completed"
    assert run["output"] == {"tripled": 9}


def test_a_no_retry_error_reply_fails_the_run_at_once(client: TestClient) -> None:
    with ready_worker(client, "job") as ws:
        event_id = client.post("/e/key", json={"name": "t/e"}).json()["ids"][0]
        request = _next_request(ws)
        ws.send_bytes(
            message(KIND.WORKER_REQUEST_ACK, pb.WorkerRequestAckData(request_id=request.request_id))
        )
        error = b'{"name": "NonRetriableError", "message": "give up", "code": "non_retriable"}'
        reply = pb.SDKResponse(
            request_id=request.request_id,
            status=pb.SDKResponseStatus.ERROR,
            body=error,
            no_retry=True,
            sdk_version="0.5.19",
        )
        ws.send_bytes(message(KIND.WORKER_REPLY, reply))
        run = _run(client, event_id)
    assert run["status"] == "Failed"
    assert "give up" in json.dumps(run)


def test_a_worker_that_acknowledges_nothing_is_closed_and_the_call_goes_elsewhere(
    client: TestClient,
) -> None:
    with ready_worker(client, "job") as mute, ready_worker(client, "job") as good:
        event_id = client.post("/e/key", json={"name": "t/e"}).json()["ids"][0]
        first = _next_request(mute)  # the first worker connected gets it, and stays silent
        closed = _closed(mute)
        assert closed.code == 1011 and "no acknowledgement" in closed.reason
        second = _next_request(good)
        assert second.run_id == first.run_id and second.request_id != first.request_id
        ack = pb.WorkerRequestAckData(request_id=second.request_id)
        good.send_bytes(message(KIND.WORKER_REQUEST_ACK, ack))
        reply = pb.SDKResponse(
            request_id=second.request_id, status=pb.SDKResponseStatus.DONE, body=b"1"
        )
        good.send_bytes(message(KIND.WORKER_REPLY, reply))
        run = _run(client, event_id)
    assert run["status"] == "Completed" and run["output"] == 1
    assert json.loads(second.request_payload)["ctx"]["attempt"] == 0  # no attempt was burned


def test_a_reply_flushed_over_http_answers_the_waiting_call(client: TestClient) -> None:
    with ready_worker(client, "job") as ws:
        event_id = client.post("/e/key", json={"name": "t/e"}).json()["ids"][0]
        request = _next_request(ws)
        ack = pb.WorkerRequestAckData(request_id=request.request_id)
        ws.send_bytes(message(KIND.WORKER_REQUEST_ACK, ack))
        reply = pb.SDKResponse(
            request_id=request.request_id, status=pb.SDKResponseStatus.DONE, body=b'"flushed"'
        )
        resp = client.post("/v0/connect/flush", content=reply.SerializeToString())
        assert resp.status_code == 200
        run = _run(client, event_id)
    assert run["status"] == "Completed" and run["output"] == "flushed"
