"""A real OTLP/HTTP trace receiver on loopback: it decodes each POST /v1/traces body with the
official protobuf messages (opentelemetry-proto) and keeps the spans, as a collector would.
`delay_s` makes it a slow collector."""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from tests.support.ports import free_port


def value_of(v: AnyValue) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return tuple(value_of(x) for x in v.array_value.values)
    return getattr(v, which) if which else None


class Received:
    """One span as the receiver decoded it, with its resource's attributes."""

    def __init__(self, span: Span, resource: dict[str, Any], scope: str) -> None:
        self.trace_id = span.trace_id.hex()
        self.span_id = span.span_id.hex()
        self.parent_id = span.parent_span_id.hex() or None
        self.name = span.name
        self.kind = span.kind
        self.start_ns = span.start_time_unix_nano
        self.end_ns = span.end_time_unix_nano
        self.status = span.status.code
        self.message = span.status.message
        self.attributes = {a.key: value_of(a.value) for a in span.attributes}
        self.links = [(link.trace_id.hex(), link.span_id.hex()) for link in span.links]
        self.resource = resource
        self.scope = scope

    def __repr__(self) -> str:
        return f"<span {self.name} {self.span_id} parent={self.parent_id}>"


class OtlpReceiver:
    def __init__(self, delay_s: float = 0.0) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.delay_s = delay_s
        self.spans: list[Received] = []
        self.requests = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.end_headers()
                    return
                receiver.take(body)
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)  # the official message: a malformed body raises here
        found = []
        for rs in request.resource_spans:
            resource = {a.key: value_of(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                found += [Received(s, resource, ss.scope.name) for s in ss.spans]
        with self._lock:
            self.requests += 1
            self.spans += found

    def of_trace(self, trace_id: str) -> list[Received]:
        with self._lock:
            return [s for s in self.spans if s.trace_id == trace_id]

    def __enter__(self) -> "OtlpReceiver":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
