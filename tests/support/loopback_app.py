"""A Platform in process, synced to a loopback app that completes every run at its first
call: the smallest real path from an event to a call, with no SDK in between."""

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from weir.platform.service import Platform
from weir.platform.settings import Settings

ANSWER = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-inngest-sdk: test:v0\r\n"
    b"content-length: 4\r\n\r\nnull"
)


class App:
    """Answers every call with a completed run (kept-alive connections); keeps each body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                found = re.search(rb"content-length: *(\d+)", head, re.IGNORECASE)
                body = await reader.readexactly(int(found.group(1)) if found else 0)
                self.bodies.append(json.loads(body))
                writer.write(ANSWER)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


def sync_payload(url: str, weir_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """One function, `go`, on event `t/go`; `weir_options`: its Weir-only options block."""
    step = {"id": "step", "name": "step", "runtime": {"type": "http", "url": f"{url}?fnId=go"}}
    function: dict[str, Any] = {
        "id": "go",
        "name": "go",
        "triggers": [{"event": "t/go"}],
        "steps": {"step": step},
    }
    if weir_options is not None:
        function["weir"] = weir_options
    return {
        "appname": "loopback",
        "url": url,
        "sdk": "test:v0",
        "v": "0.1",
        "deploy_type": "ping",
        "functions": [function],
    }


@asynccontextmanager
async def platform_with_app(
    tmp_path: Path, weir_options: dict[str, Any] | None = None
) -> AsyncIterator[tuple[Platform, App]]:
    """A started Platform on a SQLite file in `tmp_path`, synced to a loopback `App`."""
    app = App()
    server = await asyncio.start_server(app.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'weir.db'}", sqlite_synchronous="OFF")
    platform = Platform(settings)
    await platform.start()
    try:
        url = f"http://127.0.0.1:{port}/api/inngest"
        await platform.register(sync_payload(url, weir_options))
        yield platform, app
    finally:
        await platform.stop()
        server.close()
