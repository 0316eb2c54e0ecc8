"""The Connect wire: the few protobuf (proto3) messages Weir and a Connect worker exchange.

Hand-written rather than generated: Weir needs a dozen flat messages of strings, bytes and
integers, so a hundred lines of the proto3 wire format (varints and length-delimited fields)
do without a protoc step at build time, generated code to keep in step, or the `protobuf`
runtime's untyped message classes. Decoding skips fields it does not know, as protobuf does,
so a newer SDK's extra fields are harmless. Field numbers follow Inngest's `connect.v1`
schema (docs/protocol.md §13 lists them).
"""

from collections import defaultdict
from dataclasses import field
from enum import IntEnum

from weir.platform.executor.response import MAX_RESPONSE_BYTES
from weir.platform.foundation.record_type import record

VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5
# The largest frame a worker may send: a reply carrying the largest body Weir accepts from an
# app (as over HTTP), with room for its envelope. Workers' other messages are far smaller.
MAX_FRAME_BYTES = MAX_RESPONSE_BYTES + 64 * 1024
# Fields one message may hold, nested ones included. Ours have a dozen (a worker's connect
# message a few per app); the cap keeps decoding a few milliseconds, whatever the bytes: a
# frame of millions of two-byte fields would otherwise hold the event loop for seconds.
MAX_FIELDS = 4096


class WireError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


class Kind(IntEnum):
    """GatewayMessageType: what a ConnectMessage's payload is."""

    GATEWAY_HELLO = 0
    WORKER_CONNECT = 1
    GATEWAY_CONNECTION_READY = 2
    GATEWAY_EXECUTOR_REQUEST = 3
    WORKER_READY = 4
    WORKER_REQUEST_ACK = 5
    WORKER_REPLY = 6
    WORKER_REPLY_ACK = 7
    WORKER_PAUSE = 8
    WORKER_HEARTBEAT = 9
    GATEWAY_HEARTBEAT = 10
    GATEWAY_CLOSING = 11
    WORKER_REQUEST_EXTEND_LEASE = 12
    WORKER_REQUEST_EXTEND_LEASE_ACK = 13
    SYNC_FAILED = 14


class ReplyStatus(IntEnum):
    """SDKResponseStatus: how a worker's call ended (206, 200 or 500 over HTTP)."""

    NOT_COMPLETED = 0
    DONE = 1
    ERROR = 2


# -- encoding ------------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s take ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


class _Writer:
    def __init__(self) -> None:
        self.out = bytearray()

    def text(self, number: int, value: str | None, *, optional: bool = False) -> "_Writer":
        if value is None:
            return self
        return self.data(number, value.encode(), optional=optional)

    def data(self, number: int, value: bytes, *, optional: bool = False) -> "_Writer":
        if value or optional:  # proto3 leaves default values out, unless the field is optional
            self.out += _varint(number << 3 | LENGTH) + _varint(len(value)) + value
        return self

    def number(self, number: int, value: int) -> "_Writer":
        if value:
            self.out += _varint(number << 3 | VARINT) + _varint(value)
        return self

    def done(self) -> bytes:
        return bytes(self.out)


# -- decoding ------------------------------------------------------------------------------

Fields = dict[int, list[int | bytes]]


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data):
            raise WireError("a varint runs past the end of the message")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise WireError("a varint is longer than ten bytes")


class _Budget:
    """The fields left to decode in one message, its nested messages included."""

    def __init__(self) -> None:
        self.left = MAX_FIELDS

    def take(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise WireError(f"the message has more than {MAX_FIELDS} fields")


def _fields(data: bytes, budget: _Budget | None = None) -> Fields:
    budget = budget or _Budget()
    found: Fields = defaultdict(list)
    at = 0
    while at < len(data):
        budget.take()
        key, at = _read_varint(data, at)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0 is not allowed")
        if wire == VARINT:
            value, at = _read_varint(data, at)
            found[number].append(value)
        elif wire == LENGTH:
            size, at = _read_varint(data, at)
            if at + size > len(data):
                raise WireError("a field runs past the end of the message")
            found[number].append(data[at : at + size])
            at += size
        elif wire in (FIXED64, FIXED32):  # none of ours; skipped like any unknown field
            at += 8 if wire == FIXED64 else 4
            if at > len(data):
                raise WireError("a fixed-size field runs past the end of the message")
        else:
            raise WireError(f"wire type {wire} is not one protobuf uses")
    return found


def _last_bytes(fields: Fields, number: int) -> bytes:
    values = [v for v in fields.get(number, []) if isinstance(v, bytes)]
    return values[-1] if values else b""  # the last one wins, as in protobuf


def _text(fields: Fields, number: int) -> str:
    try:
        return _last_bytes(fields, number).decode()
    except UnicodeDecodeError as exc:
        raise WireError(f"field {number} is not UTF-8 text") from exc


def _optional_text(fields: Fields, number: int) -> str | None:
    return _text(fields, number) if number in fields else None


def _int(fields: Fields, number: int) -> int:
    values = [v for v in fields.get(number, []) if isinstance(v, int)]
    return values[-1] if values else 0


def _int64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value  # two's complement, as sent


# -- the messages --------------------------------------------------------------------------


@record
class Message:
    """ConnectMessage: the envelope of everything sent over the socket."""

    kind: int
    payload: bytes = b""

    def encode(self) -> bytes:
        return _Writer().number(1, self.kind).data(2, self.payload).done()

    @classmethod
    def decode(cls, data: bytes) -> "Message":
        fields = _fields(data)
        return cls(_int(fields, 1), _last_bytes(fields, 2))


@record
class StartResponse:
    connection_id: str
    gateway_endpoint: str
    gateway_group: str
    session_token: str
    sync_token: str

    def encode(self) -> bytes:
        return (
            _Writer()
            .text(1, self.connection_id)
            .text(2, self.gateway_endpoint)
            .text(3, self.gateway_group)
            .text(4, self.session_token)
            .text(5, self.sync_token)
            .done()
        )


def check_start_request(data: bytes) -> None:
    """StartRequest holds only gateways to avoid; Weir is one gateway, so it only checks it."""
    _fields(data)


@record
class AppConfiguration:
    app_name: str
    app_version: str | None
    functions: bytes  # the function configs as JSON, as an HTTP sync sends them


@record
class WorkerConnect:
    """WorkerConnectRequestData: the worker's apps and functions, and who it is."""

    connection_id: str
    instance_id: str
    session_token: str
    apps: tuple[AppConfiguration, ...]
    framework: str
    sdk_version: str
    sdk_language: str
    max_worker_concurrency: int | None

    @classmethod
    def decode(cls, data: bytes) -> "WorkerConnect":
        budget = _Budget()
        fields = _fields(data, budget)
        auth = _fields(_last_bytes(fields, 3), budget)
        apps = []
        for raw in fields.get(5, []):
            if not isinstance(raw, bytes):
                raise WireError("an app configuration is not a message")
            app = _fields(raw, budget)
            apps.append(
                AppConfiguration(_text(app, 1), _optional_text(app, 2), _last_bytes(app, 4))
            )
        return cls(
            connection_id=_text(fields, 1),
            instance_id=_text(fields, 2),
            session_token=_text(auth, 1),
            apps=tuple(apps),
            framework=_text(fields, 9),
            sdk_version=_text(fields, 11),
            sdk_language=_text(fields, 12),
            max_worker_concurrency=_int64(_int(fields, 14)) if 14 in fields else None,
        )


@record
class ConnectionReady:
    """GatewayConnectionReadyData: intervals as "<n>s", the only form the SDK reads."""

    heartbeat_interval_s: int
    extend_lease_interval_s: int

    def encode(self) -> bytes:
        return (
            _Writer()
            .text(1, f"{self.heartbeat_interval_s}s")
            .text(2, f"{self.extend_lease_interval_s}s")
            .done()
        )


@record
class ExecutorRequest:
    """GatewayExecutorRequestData: one call of a function, its body as over HTTP."""

    request_id: str
    app_id: str
    app_name: str
    function_id: str
    function_slug: str
    step_id: str
    request_payload: bytes
    run_id: str
    lease_id: str
    job_id: str

    def encode(self) -> bytes:
        return (
            _Writer()
            .text(1, self.request_id)
            .text(4, self.app_id)
            .text(5, self.app_name)
            .text(6, self.function_id)
            .text(7, self.function_slug)
            .text(8, self.step_id, optional=True)
            .data(9, self.request_payload)
            .text(12, self.run_id)
            .text(13, self.lease_id)
            .text(14, self.job_id)
            .done()
        )


@record
class RequestAck:
    """WorkerRequestAckData: the worker has the request."""

    request_id: str

    @classmethod
    def decode(cls, data: bytes) -> "RequestAck":
        return cls(_text(_fields(data), 1))


@record
class ExtendLease:
    """WorkerRequestExtendLeaseData: the worker is still on the request, holding this lease."""

    request_id: str
    lease_id: str

    @classmethod
    def decode(cls, data: bytes) -> "ExtendLease":
        fields = _fields(data)
        return cls(_text(fields, 1), _text(fields, 10))


@record
class ExtendLeaseAck:
    """WorkerRequestExtendLeaseAckData: the next lease, or none (stop: the call is over)."""

    request_id: str
    app_id: str
    function_slug: str
    new_lease_id: str | None

    def encode(self) -> bytes:
        return (
            _Writer()
            .text(1, self.request_id)
            .text(4, self.app_id)
            .text(5, self.function_slug)
            .text(6, self.new_lease_id, optional=True)
            .done()
        )


@record
class Reply:
    """SDKResponse: the answer to a request, its body as the HTTP response's."""

    request_id: str
    status: int
    body: bytes = field(repr=False)
    no_retry: bool
    retry_after: str | None
    sdk_version: str
    request_version: int

    @classmethod
    def decode(cls, data: bytes) -> "Reply":
        fields = _fields(data)
        return cls(
            request_id=_text(fields, 1),
            status=_int(fields, 5),
            body=_last_bytes(fields, 6),
            no_retry=bool(_int(fields, 7)),
            retry_after=_optional_text(fields, 8),
            sdk_version=_text(fields, 9),
            request_version=_int(fields, 10),
        )


@record
class ReplyAck:
    """WorkerReplyAckData: Weir has the reply; the worker may forget it."""

    request_id: str

    def encode(self) -> bytes:
        return _Writer().text(1, self.request_id).done()
