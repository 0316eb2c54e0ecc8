"""The executor's HTTP client. aiohttp: the calls to apps are the hot path, and one shared
httpx client collapses under concurrency (docs/architecture.md, The HTTP client); calls to
plain `http://` URLs take the leaner path of lean_http.py, a sixth of aiohttp's CPU per call.

A client given a `socket_factory` (step.ai.infer's, executor/ai_hosts.py) makes every connection
through it, so the factory sees, and may refuse, the resolved address of each one; such a client
never takes the lean path, whose connections would bypass it."""

import socket
from collections.abc import Callable
from typing import Any

import aiohttp
from weir.platform.executor.http import lean as lean_http
from weir.platform.executor.response import MAX_RESPONSE_BYTES, RawResponse


class TransportError(Exception):
    """The app could not be reached, or its answer did not arrive whole."""


class Redirected(TransportError):
    """The app answered with a redirect, which Weir never follows: the new location could be
    a host --allowed-app-hosts does not list, and the request carries a signature."""

    def __init__(self, url: str, status: int, location: str) -> None:
        super().__init__(
            f"{url} answered HTTP {status} redirecting to {location or '(no Location)'}; Weir "
            "does not follow redirects: register the app under its final URL"
        )


class AppClient:
    def __init__(
        self,
        timeout_s: float = 7200.0,
        connect_timeout_s: float = 10.0,
        socket_factory: Callable[[tuple[Any, ...]], socket.socket] | None = None,
    ) -> None:
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect_timeout_s)
        self._connect_timeout_s = connect_timeout_s
        self._session: aiohttp.ClientSession | None = None
        self._socket_factory = socket_factory
        self._lean = lean_http.LeanClient(MAX_RESPONSE_BYTES, _too_big)

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # Idle connections are dropped after 2 s: servers such as uvicorn close theirs after
            # 5 s, and a request written into a connection the server just closed fails.
            connector = aiohttp.TCPConnector(
                limit=0,
                ttl_dns_cache=300,
                keepalive_timeout=2,
                socket_factory=self._socket_factory,
            )
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
        return self._session

    async def request(
        self,
        method: str,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout_s: float | None = None,
    ) -> RawResponse:
        """`timeout_s` replaces the client's (the app timeout) for this one request."""
        target = lean_http.lean_target(url) if self._socket_factory is None else None
        if target is not None:
            return await self._lean_request(method, url, target, body, headers, timeout_s)
        timeout = self._timeout
        if timeout_s is not None:
            connect = min(timeout_s, self._connect_timeout_s)
            timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect)
        try:
            async with self._client().request(
                method, url, data=body, headers=headers, allow_redirects=False, timeout=timeout
            ) as resp:
                if 300 <= resp.status < 400:
                    raise Redirected(url, resp.status, resp.headers.get("location", ""))
                data = await _read_capped(resp)
                return RawResponse(
                    resp.status, {k.lower(): v for k, v in resp.headers.items()}, data
                )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}".strip(": ")) from exc

    async def _lean_request(
        self,
        method: str,
        url: str,
        target: lean_http.SplitResult,
        body: bytes,
        headers: dict[str, str],
        timeout_s: float | None,
    ) -> RawResponse:
        total = timeout_s if timeout_s is not None else self._timeout.total or 7200.0
        try:
            status, answer, data = await self._lean.request(
                method, target, body, headers, total, self._connect_timeout_s
            )
        except lean_http.TooBig as exc:
            raise TransportError(str(exc)) from None  # our own sentence, shown as it is
        except (TimeoutError, lean_http.LeanError, OSError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}".strip(": ")) from exc
        if 300 <= status < 400:
            raise Redirected(url, status, answer.get("location", ""))
        return RawResponse(status, answer, data)

    async def close(self) -> None:
        self._lean.close()
        if self._session is not None:
            await self._session.close()


def _too_big() -> str:
    return f"the response exceeded {MAX_RESPONSE_BYTES} bytes (8 MiB), the most allowed"


async def _read_capped(resp: aiohttp.ClientResponse) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_chunked(65536):
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise TransportError(_too_big())
        chunks.append(chunk)
    return b"".join(chunks)
