"""The executor's lean path for plain http:// apps (executor/http/lean.py), against a raw
HTTP server on loopback that answers each request the way the test tells it to."""

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from weir.platform.executor import app_errors
from weir.platform.executor.http import lean as lean_http
from weir.platform.executor.http.client import AppClient, Redirected, TransportError

Answer = Callable[[bytes], Awaitable[bytes | None]]  # the request -> the bytes to send back


class Server:
    """Counts connections; `answer` decides what each request gets (None: close at once)."""

    def __init__(self, answer: Answer) -> None:
        self.answer, self.connections = answer, 0
        self.requests: list[bytes] = []
        self.one_per_connection = False
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        with contextlib.suppress(ConnectionError, asyncio.IncompleteReadError):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply = await self.answer(request)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if b"connection: close" in reply.lower() or self.one_per_connection:
                    break
        writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/api/inngest?fnId=a-f&stepId=step"


@contextlib.asynccontextmanager
async def serving(answer: Answer) -> AsyncIterator[Server]:
    server = Server(answer)
    server.server = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.server.close()


def fixed(reply: bytes) -> Answer:
    async def answer(_request: bytes) -> bytes:
        return reply

    return answer


OK = b"HTTP/1.1 206 Partial Content\r\nContent-Length: 2\r\nX-Inngest-Sdk: x\r\n\r\n[]"
HEADERS = {"content-type": "application/json", "x-run-id": "r1"}


async def post(client: AppClient, url: str, timeout_s: float | None = None) -> tuple[int, bytes]:
    raw = await client.request("POST", url, b'{"a":1}', HEADERS, timeout_s=timeout_s)
    return raw.status, raw.body


def test_calls_share_one_kept_alive_connection_and_carry_the_request_whole() -> None:
    async def main() -> None:
        client = AppClient()
        async with serving(fixed(OK)) as server:
            for _ in range(3):
                assert await post(client, server.url) == (206, b"[]")
            await client.close()
        assert server.connections == 1
        first = server.requests[0]
        assert first.startswith(b"POST /api/inngest?fnId=a-f&stepId=step HTTP/1.1\r\n")
        assert b"\r\nx-run-id: r1\r\n" in first and first.endswith(b'\r\n\r\n{"a":1}')

    asyncio.run(main())


def test_chunked_and_close_delimited_answers_are_read_whole() -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[1,\r\n2\r\n2]\r\n0\r\n\r\n"
    )
    until_close = b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n[3,4]"

    async def main() -> None:
        client = AppClient()
        async with serving(fixed(chunked)) as server:
            assert await post(client, server.url) == (200, b"[1,2]")
        async with serving(fixed(until_close)) as server:
            assert await post(client, server.url) == (200, b"[3,4]")
            assert await post(client, server.url) == (200, b"[3,4]")
            assert server.connections == 2  # "Connection: close": not used again
        await client.close()

    asyncio.run(main())


def test_a_connection_the_app_closed_while_idle_is_not_reused() -> None:
    async def main() -> None:
        client = AppClient()
        async with serving(fixed(OK)) as server:
            server.one_per_connection = True  # closes after each answer, without saying so
            assert await post(client, server.url) == (206, b"[]")
            await asyncio.sleep(0.1)  # the close arrives while the connection is idle
            assert await post(client, server.url) == (206, b"[]")
            assert server.connections == 2
        await client.close()

    asyncio.run(main())


def test_failures_read_as_the_sentences_aiohttp_failures_do() -> None:
    async def hang(_request: bytes) -> bytes:
        await asyncio.sleep(30)
        return OK

    async def cut(_request: bytes) -> bytes | None:
        return None

    huge = b"HTTP/1.1 206 Partial Content\r\nContent-Length: 9000000\r\n\r\n" + b" " * 9_000_000

    async def main() -> None:
        client = AppClient()
        async with serving(hang) as server:
            with pytest.raises(TransportError) as timed_out:
                await post(client, server.url, timeout_s=0.2)
            url = server.url
        assert app_errors.unreachable(url, timed_out.value).startswith("Timeout waiting")
        with pytest.raises(TransportError) as refused:  # the server is gone
            await post(client, url)
        assert app_errors.unreachable(url, refused.value).startswith("no app answered at")
        async with serving(cut) as server:
            with pytest.raises(TransportError) as closed:
                await post(client, server.url)
            said = app_errors.unreachable(server.url, closed.value)
        assert "closed the connection before answering" in said
        async with serving(fixed(huge)) as server:
            with pytest.raises(TransportError) as too_big:
                await post(client, server.url)
        assert app_errors.unreachable(url, too_big.value) == (
            "the response exceeded 8388608 bytes (8 MiB), the most allowed"
        )
        await client.close()

    asyncio.run(main())


def test_a_redirect_is_refused_and_a_header_cannot_break_a_line() -> None:
    moved = b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://x/\r\nContent-Length: 0\r\n\r\n"

    async def main() -> None:
        client = AppClient()
        async with serving(fixed(moved)) as server:
            with pytest.raises(Redirected, match="redirecting to http://x/"):
                await post(client, server.url)
            for evil in ({"x-evil": "a\r\nb: c"}, {"x-evil\nb": "c"}, {"x-evil": "a\x00"}):
                with pytest.raises(ValueError, match="line break"):
                    await client.request("POST", server.url, b"{}", evil)
        await client.close()

    asyncio.run(main())


def test_only_plain_http_urls_take_the_lean_path() -> None:
    assert lean_http.lean_target("http://127.0.0.1:3000/api/inngest?fnId=a") is not None
    for url in (
        "https://app.example/api/inngest",  # TLS: aiohttp
        "http://user:pw@app.example/api",  # credentials: aiohttp turns them into a header
        "http://app.example/a path",  # a space cannot stand in a request line
        "http://app.example/é",
        "http://app.example/\x7f",  # DEL: not printable
    ):
        assert lean_http.lean_target(url) is None, url
