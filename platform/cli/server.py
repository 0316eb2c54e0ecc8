"""The HTTP server's connection limits: what uvicorn leaves to a proxy in front of it.

uvicorn waits for a request's headers and body as long as the client likes, reads headers of
any size, and accepts connections until the process runs out of file descriptors; a few
thousand half-open (slowloris) connections then keep everyone else out. (Its own
`limit_concurrency` answers 503 to the newcomer once full, health probes included, and keeps
the idle connections: the opposite of what is wanted.) `protocols` returns uvicorn's
httptools protocol and its sans-I/O WebSocket one, with, per connection:
- a deadline for the headers (`header_timeout_s` from the first byte of a request, or from
  the connection when nothing came yet) and a cap on their size (431);
- a deadline for the body that grows with what arrives (`body_timeout_s` plus one second per
  MIN_BODY_RATE bytes), not counted while Weir itself holds reading back;
- at most `max_connections` open: past it, the idle connection idle longest (waiting for its
  headers, or kept alive between requests: no request of it is in flight) is dropped to make
  room, and with none such the newcomer is;
- WebSockets (Connect workers) at most half of those, so they never crowd out health probes
  and ingest: past it an upgrade is answered 503. A socket's frames are capped at
  wire.MAX_FRAME_BYTES, refused (close 1009) by the length in the frame's header, unread.
The app's own time (after the body is in) is not limited here.
"""

import asyncio
import contextlib
import logging
import resource
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from weir.platform.connect.wire import MAX_FRAME_BYTES
from weir.platform.settings import Settings

log = logging.getLogger("weir.server")
MIN_BODY_RATE = 64 * 1024  # bytes a second a body must average, past its first body_timeout_s
MAX_HEADER_BYTES = 64 * 1024
FD_RESERVE = 64  # descriptors kept for the store, logs and the like, besides calls to apps
HEADERS, BODY, APP = "headers", "body", "app"


def protocols(settings: Settings) -> dict[str, Any]:
    """uvicorn.Config's protocol options: both protocols, sharing one set of limits."""
    limits = _Limits(settings)
    return {
        "http": _http_protocol(limits),
        "ws": _ws_protocol(limits),
        "ws_max_size": MAX_FRAME_BYTES,
    }


def _ws_protocol(limits: "_Limits") -> type[asyncio.Protocol]:
    class CountedSocket(WebSocketsSansIOProtocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            limits.sockets.add(self)

        def connection_lost(self, exc: Exception | None) -> None:
            limits.sockets.discard(self)
            super().connection_lost(exc)

    return CountedSocket


def _http_protocol(limits: "_Limits") -> type[asyncio.Protocol]:
    class GuardedHttp(HttpToolsProtocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self.phase, self.header_bytes = APP, 0
            self.timer: asyncio.TimerHandle | None = None
            self._expect_headers()
            limits.admit(self)

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_timer()
            limits.idle.pop(self, None)
            super().connection_lost(exc)

        def handle_websocket_upgrade(self) -> None:
            self._stop_timer()  # the socket's protocol takes the transport over
            limits.idle.pop(self, None)
            self.phase = APP
            if len(limits.sockets) >= limits.max_sockets:
                _refuse(self.transport, b"503 Service Unavailable", b"retry-after: 5\r\n")
                return
            super().handle_websocket_upgrade()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.cycle.response_complete:
                limits.idle[self] = None  # kept alive, nothing in flight: the first to go

        def data_received(self, data: bytes) -> None:
            if self.phase == HEADERS:
                self.header_bytes += len(data)
            super().data_received(data)
            # still in the headers after this chunk (a chunk is at most a read's worth)
            if self.phase == HEADERS and self.header_bytes > MAX_HEADER_BYTES:
                _refuse(self.transport, b"431 Request Header Fields Too Large")

        def on_message_begin(self) -> None:
            super().on_message_begin()
            if self.phase != HEADERS:  # a later request on a kept-alive connection
                self._expect_headers()

        def on_headers_complete(self) -> None:
            limits.idle.pop(self, None)
            self.phase = BODY
            self.deadline = self.loop.time() + limits.body_timeout_s
            super().on_headers_complete()

        def on_body(self, body: bytes) -> None:
            self.deadline += len(body) / MIN_BODY_RATE
            super().on_body(body)

        def on_message_complete(self) -> None:
            self.phase = APP
            self._stop_timer()
            super().on_message_complete()

        def _expect_headers(self) -> None:
            self.phase, self.header_bytes = HEADERS, 0
            self.deadline = self.loop.time() + limits.header_timeout_s
            limits.idle.pop(self, None)  # moved to the end: idle from now
            limits.idle[self] = None
            self._arm(self.deadline)

        def _arm(self, when: float) -> None:
            self._stop_timer()
            self.timer = self.loop.call_at(when, self._check_deadline)

        def _stop_timer(self) -> None:
            if self.timer is not None:
                self.timer.cancel()
                self.timer = None

        def _check_deadline(self) -> None:
            self.timer = None
            if self.phase == APP or self.transport.is_closing():
                return
            now = self.loop.time()
            if self.phase == BODY and self.flow.read_paused:  # Weir holds reading back
                self.deadline = max(self.deadline, now + limits.body_timeout_s)
            if now < self.deadline:
                self._arm(self.deadline)
                return
            if self.phase == HEADERS:
                _refuse(self.transport, b"408 Request Timeout")
            else:
                self.transport.abort()  # the app sees a disconnect while it reads the body

    return GuardedHttp


class _Limits:
    def __init__(self, settings: Settings) -> None:
        self.header_timeout_s = settings.header_timeout_s
        self.body_timeout_s = settings.body_timeout_s
        self.max_connections = effective_max_connections(settings)
        self.max_sockets = max(1, self.max_connections // 2)
        # HTTP connections with no request in flight, idle longest first
        self.idle: OrderedDict[Any, None] = OrderedDict()
        self.sockets: set[Any] = set()  # open WebSockets

    def admit(self, protocol: Any) -> None:
        connections = protocol.connections
        if len(connections) <= self.max_connections:
            return
        oldest = next(iter(self.idle), None)
        victim = oldest if oldest is not None and oldest is not protocol else protocol
        self.idle.pop(victim, None)
        victim.transport.abort()


def effective_max_connections(settings: Settings) -> int:
    """--max-connections, lowered to what the descriptor limit leaves after calls to apps."""
    soft = raise_fd_limit()
    room = soft - settings.workers - FD_RESERVE
    if room < settings.max_connections:
        log.warning(
            "the open-file limit (%d) leaves room for %d client connections, not %d: "
            "raise `ulimit -n` to serve more",
            soft,
            max(room, 16),
            settings.max_connections,
        )
    return max(min(settings.max_connections, room), 16)


def raise_fd_limit() -> int:
    """The soft limit of open files, raised to the hard one (what the OS lets us have)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return soft


def _refuse(transport: asyncio.Transport, status: bytes, extra: bytes = b"") -> None:
    head = b"HTTP/1.1 " + status + b"\r\nconnection: close\r\ncontent-length: 0\r\n"
    transport.write(head + extra + b"\r\n")
    transport.close()
