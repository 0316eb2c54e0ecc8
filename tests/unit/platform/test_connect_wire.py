"""Weir's hand-written Connect messages against the official SDK's generated protobuf classes:
what Weir writes, the SDK reads field for field, and the other way round."""

import pytest
from inngest.connect._internal import connect_pb2 as pb
from weir.platform.connect import wire
from weir.platform.connect.wire import Kind, Message, ReplyStatus


def test_message_kinds_match_the_sdk_enum() -> None:
    for kind in Kind:
        assert pb.GatewayMessageType.Value(kind.name) == kind.value
    for status in ReplyStatus:
        assert pb.SDKResponseStatus.Value(status.name) == status.value


@pytest.mark.parametrize("kind", [Kind.GATEWAY_HELLO, Kind.GATEWAY_CLOSING, Kind.SYNC_FAILED])
def test_an_envelope_reads_back_in_the_sdk(kind: Kind) -> None:
    parsed = pb.ConnectMessage()
    parsed.ParseFromString(Message(kind, b"\x00payload").encode())
    assert (parsed.kind, parsed.payload) == (kind.value, b"\x00payload")
    assert Message.decode(parsed.SerializeToString()) == Message(kind, b"\x00payload")


def test_start_response() -> None:
    ours = wire.StartResponse("c1", "ws://127.0.0.1:8288/v0/connect/gateway", "weir", "s", "t")
    parsed = pb.StartResponse()
    parsed.ParseFromString(ours.encode())
    assert (parsed.connection_id, parsed.gateway_endpoint, parsed.gateway_group) == (
        "c1",
        "ws://127.0.0.1:8288/v0/connect/gateway",
        "weir",
    )
    assert (parsed.session_token, parsed.sync_token) == ("s", "t")


def test_worker_connect_is_read_with_every_field_weir_uses() -> None:
    sent = pb.WorkerConnectRequestData(
        connection_id="c1",
        instance_id="host-1",
        auth_data=pb.AuthData(session_token="tok", sync_token="tok"),
        capabilities=b'{"connect":"v1"}',
        apps=[
            pb.AppConfiguration(app_name="a", app_version="v2", functions=b"[1]"),
            pb.AppConfiguration(app_name="b", functions=b"[]"),
        ],
        system_attributes=pb.SystemAttributes(cpu_cores=4, mem_bytes=1 << 33, os="linux"),
        environment="prod",
        framework="connect",
        sdk_version="0.5.19",
        sdk_language="py",
        max_worker_concurrency=-1,
    )
    sent.started_at.GetCurrentTime()  # a nested message Weir skips
    got = wire.WorkerConnect.decode(sent.SerializeToString())
    assert (got.connection_id, got.instance_id, got.session_token) == ("c1", "host-1", "tok")
    assert got.apps == (
        wire.AppConfiguration("a", "v2", b"[1]"),
        wire.AppConfiguration("b", None, b"[]"),
    )
    assert (got.framework, got.sdk_version, got.sdk_language) == ("connect", "0.5.19", "py")
    assert got.max_worker_concurrency == -1  # int64: negative numbers survive
    unset = wire.WorkerConnect.decode(pb.WorkerConnectRequestData().SerializeToString())
    assert unset.max_worker_concurrency is None and unset.apps == ()


def test_connection_ready_intervals_are_the_form_the_sdk_parses() -> None:
    parsed = pb.GatewayConnectionReadyData()
    parsed.ParseFromString(wire.ConnectionReady(10, 5).encode())
    assert (parsed.heartbeat_interval, parsed.extend_lease_interval) == ("10s", "5s")


def test_executor_request() -> None:
    ours = wire.ExecutorRequest(
        request_id="r1",
        app_id="01APP",
        app_name="shop",
        function_id="01FN",
        function_slug="shop-order",
        step_id="step",
        request_payload=b'{"event":{}}',
        run_id="01RUN",
        lease_id="l1",
        job_id="42",
    )
    parsed = pb.GatewayExecutorRequestData()
    parsed.ParseFromString(ours.encode())
    assert parsed.HasField("step_id") and parsed.step_id == "step"
    assert (parsed.request_id, parsed.app_id, parsed.app_name) == ("r1", "01APP", "shop")
    assert (parsed.function_id, parsed.function_slug) == ("01FN", "shop-order")
    assert (parsed.request_payload, parsed.run_id) == (b'{"event":{}}', "01RUN")
    assert (parsed.lease_id, parsed.job_id) == ("l1", "42")


def test_acks_and_lease_extensions() -> None:
    ack = pb.WorkerRequestAckData(request_id="r1", app_id="x", run_id="run")
    assert wire.RequestAck.decode(ack.SerializeToString()) == wire.RequestAck("r1")
    extend = pb.WorkerRequestExtendLeaseData(request_id="r1", lease_id="l1", run_id="run")
    assert wire.ExtendLease.decode(extend.SerializeToString()) == wire.ExtendLease("r1", "l1")
    for new in ("l2", None):
        parsed = pb.WorkerRequestExtendLeaseAckData()
        parsed.ParseFromString(wire.ExtendLeaseAck("r1", "a", "s", new).encode())
        assert parsed.request_id == "r1"
        assert parsed.HasField("new_lease_id") == (new is not None)  # none: the worker stops
        assert parsed.new_lease_id == (new or "")
    reply_ack = pb.WorkerReplyAckData()
    reply_ack.ParseFromString(wire.ReplyAck("r1").encode())
    assert reply_ack.request_id == "r1"


def test_replies() -> None:
    sent = pb.SDKResponse(
        request_id="r1",
        status=pb.SDKResponseStatus.NOT_COMPLETED,
        body=b'[{"op":"StepRun"}]',
        no_retry=True,
        retry_after="2026-01-01T00:00:00Z",
        sdk_version="0.5.19",
        request_version=2,
    )
    got = wire.Reply.decode(sent.SerializeToString())
    assert got == wire.Reply(
        "r1",
        ReplyStatus.NOT_COMPLETED,
        b'[{"op":"StepRun"}]',
        True,
        "2026-01-01T00:00:00Z",
        "0.5.19",
        2,
    )
    bare = wire.Reply.decode(pb.SDKResponse(request_id="r2").SerializeToString())
    assert (bare.status, bare.retry_after, bare.no_retry, bare.body) == (0, None, False, b"")


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"\x08", "varint runs past the end"),
        (b"\x12\x05ab", "runs past the end of the message"),
        (b"\x08" + b"\xff" * 11, "longer than ten bytes"),
        (b"\x0b", "wire type 3"),
        (b"\x00\x01", "field number 0"),
        (b"\x11\x00\x00", "fixed-size field runs past"),
    ],
)
def test_malformed_bytes_are_refused_saying_why(data: bytes, problem: str) -> None:
    with pytest.raises(wire.WireError, match=problem):
        Message.decode(data)


def test_text_that_is_not_utf8_is_refused() -> None:
    with pytest.raises(wire.WireError, match="not UTF-8"):
        wire.RequestAck.decode(b"\x0a\x01\xff")


def test_unknown_fields_are_skipped() -> None:
    unknown = b"\x19" + b"\x00" * 8 + b"\x25" + b"\x00" * 4 + b"\xf8\x01\x05"  # 3, 4, 31
    assert Message.decode(unknown + Message(Kind.WORKER_PAUSE).encode()).kind == Kind.WORKER_PAUSE
