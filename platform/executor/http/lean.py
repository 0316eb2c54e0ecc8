"""Calls to apps at plain `http://` URLs, written straight onto pooled keep-alive sockets.

The executor's call is the hot path, and aiohttp spends about 170 µs of CPU on one POST and its
answer (request and response objects, header multidicts, timers, payload lookups), against
20-30 µs for the same bytes written and parsed here: on a 2-core machine shared with the app,
that is CPU the app does not get (bench/RESULTS.md, Official SDK app). The answer is parsed by
httptools (the C parser uvicorn uses): content-length, chunked, or ended by the close.

Only what this needs: HTTP/1.1, one request at a time per connection, idle connections kept
`KEEPALIVE_S` seconds (servers such as uvicorn close theirs after 5 s; a request written into a
connection the server has just closed fails, as it would through aiohttp). URLs with anything
else (https, user info, characters a request line cannot carry) go through aiohttp.
"""

import asyncio
import functools
import re
import time
from collections.abc import Callable
from typing import cast
from urllib.parse import SplitResult, urlsplit

import httptools

__all__ = ["ConnectFailed", "LeanClient", "LeanError", "SplitResult", "TooBig", "lean_target"]

KEEPALIVE_S = 2.0
_SAFE = re.compile(r"[\x21-\x7e]*")  # a request target: printable ASCII, no spaces
_LINE_BREAK = re.compile(r"[\r\n\x00]")  # what a header may not hold


class LeanError(Exception):
    """The app's answer did not arrive whole, or was not HTTP."""


class TooBig(LeanError):
    """The answer is larger than the cap; its message is the sentence to show."""


class ConnectFailed(LeanError):
    """No connection to the app; `os_error` says why (refused, unknown host, ...)."""

    def __init__(self, host: str, port: int, os_error: OSError) -> None:
        super().__init__(f"cannot connect to {host}:{port}: {os_error}")
        self.os_error = os_error


class _Exchange(asyncio.Protocol):
    """One connection; one request and its answer at a time."""

    def __init__(self, cap: int, too_big: Callable[[], str]) -> None:
        self.transport: asyncio.Transport | None = None
        self.cap, self.too_big = cap, too_big
        self.idle_since = 0.0
        self.closed = False
        self._reset()

    def _reset(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: dict[str, str] = {}
        self.chunks: list[bytes] = []
        self.size = 0
        self.headers_done = False
        self.over = False  # the answer passed the cap
        self.keep_alive = False  # read when the headers are in: the parser forgets it after
        self.complete = False
        self.done: asyncio.Future[None] | None = None

    # -- asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses

    def data_received(self, data: bytes) -> None:
        if self.done is None or self.done.done():
            self._fail(LeanError("the app sent bytes nobody asked for"))
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(LeanError("the app answered with a protocol upgrade"))
        except httptools.HttpParserError as exc:
            self._fail(LeanError(f"the app's answer is not valid HTTP: {exc}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.done is None or self.done.done():
            return
        framed = "content-length" in self.headers or "chunked" in self.headers.get(
            "transfer-encoding", ""
        )
        if self.headers_done and not framed:
            self.complete = True  # an answer delimited by the close is whole now
            self.done.set_result(None)
            return
        why = f": {exc}" if exc else ""
        self.done.set_exception(LeanError(f"the app closed the connection mid-answer{why}"))

    # -- httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()
        self.keep_alive = self.parser.should_keep_alive()
        self.headers_done = True

    def on_body(self, body: bytes) -> None:
        self.size += len(body)
        if self.size > self.cap:
            self.over = True
            raise TooBig(self.too_big())  # stops the parser; _fail reports it
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        self.complete = True
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def _fail(self, exc: Exception) -> None:
        if self.done is not None and not self.done.done():
            # httptools wraps a callback's exception; the cap's own sentence is the one to keep
            self.done.set_exception(TooBig(self.too_big()) if self.over else exc)
        self.close()

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def exchange(self, request: bytes) -> tuple[int, dict[str, str], bytes, bool]:
        """Send `request`; the answer's status, headers, body and whether the connection may
        carry another request."""
        self._reset()
        assert self.transport is not None
        self.done = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        await self.done
        reusable = self.complete and self.keep_alive and not self.closed
        return self.status, self.headers, b"".join(self.chunks), reusable


@functools.lru_cache(maxsize=4096)  # a function's URLs (one per step id) repeat call after call
def lean_target(url: str) -> SplitResult | None:
    """The URL split, if this module can carry calls to it; None: aiohttp carries them."""
    if not url.startswith("http://") or not _SAFE.fullmatch(url):
        return None
    parts = urlsplit(url)
    if not parts.hostname or "@" in parts.netloc or parts.fragment:
        return None
    return parts


class LeanClient:
    def __init__(self, cap: int, too_big: Callable[[], str]) -> None:
        self.cap, self.too_big = cap, too_big
        self._idle: dict[tuple[str, int], list[_Exchange]] = {}

    async def request(
        self,
        method: str,
        parts: SplitResult,
        body: bytes,
        headers: dict[str, str],
        timeout_s: float,
        connect_timeout_s: float,
    ) -> tuple[int, dict[str, str], bytes]:
        host, port = parts.hostname or "", parts.port or 80
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        lines = [f"{method} {target} HTTP/1.1", f"Host: {parts.netloc}"]
        for name, value in headers.items():
            if _LINE_BREAK.search(name) or _LINE_BREAK.search(value):
                raise ValueError(f"header {name!r} holds a line break or NUL")
            if name.lower() not in ("host", "content-length"):
                lines.append(f"{name}: {value}")
        lines.append(f"Content-Length: {len(body)}")
        request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        conn: _Exchange | None = None
        try:
            async with asyncio.timeout(timeout_s):
                conn = self._reuse((host, port))
                if conn is None:
                    conn = await self._connect(host, port, min(timeout_s, connect_timeout_s))
                status, answer, data, reusable = await conn.exchange(request)
        except BaseException:  # timed out, cancelled (an aborted call), failed: never reused
            if conn is not None:
                conn.close()  # a late answer must not be read as the next call's
            raise
        if reusable:
            conn.idle_since = time.monotonic()
            self._idle.setdefault((host, port), []).append(conn)
        else:
            conn.close()
        return status, answer, data

    def _reuse(self, key: tuple[str, int]) -> "_Exchange | None":
        idle = self._idle.get(key)
        oldest = time.monotonic() - KEEPALIVE_S
        while idle:
            conn = idle.pop()  # the most recently used first: the least likely to be closed
            if not conn.closed and conn.idle_since >= oldest:
                return conn
            conn.close()
        return None

    async def _connect(self, host: str, port: int, timeout_s: float) -> _Exchange:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout_s):
                _, conn = await loop.create_connection(
                    lambda: _Exchange(self.cap, self.too_big), host, port
                )
        except TimeoutError:
            raise  # a TimeoutError is an OSError too: the caller says it timed out
        except OSError as exc:
            raise ConnectFailed(host, port, exc) from exc
        return conn

    def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()
