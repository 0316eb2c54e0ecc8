"""A run that waited in its FIFO lane makes its first call with the trigger events the executor
kept when the run was created: the handover reads no event back from the store, and the call
still carries the run's own event."""

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from weir.platform.executor import driver
from weir.platform.service import Platform
from weir.platform.settings import Settings
from weir.platform.store import event_records, run_records

ANSWER = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-inngest-sdk: test:v0\r\n"
    b"content-length: 4\r\n\r\nnull"
)


class App:
    """A loopback app completing every run at its first call, keeping each request's body."""

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


def sync_payload(url: str) -> dict[str, Any]:
    step = {"id": "step", "name": "step", "runtime": {"type": "http", "url": f"{url}?fnId=go"}}
    function = {
        "id": "go",
        "name": "go",
        "triggers": [{"event": "t/go"}],
        "steps": {"step": step},
        "weir": {"lane": {"key": "event.data.k"}},
    }
    return {
        "appname": "lanes",
        "url": url,
        "sdk": "test:v0",
        "v": "0.1",
        "deploy_type": "ping",
        "functions": [function],
    }


@pytest.fixture
async def weir(tmp_path: Path) -> AsyncIterator[tuple[Platform, App]]:
    app = App()
    server = await asyncio.start_server(app.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'weir.db'}", sqlite_synchronous="OFF")
    platform = Platform(settings)
    await platform.start()
    try:
        await platform.register(sync_payload(f"http://127.0.0.1:{port}/api/inngest"))
        yield platform, app
    finally:
        await platform.stop()
        server.close()


async def test_a_run_handed_its_lane_calls_with_the_events_kept_at_its_creation(
    weir: tuple[Platform, App], monkeypatch: pytest.MonkeyPatch
) -> None:
    platform, app = weir
    read_back: list[list[str]] = []
    load = event_records.load_event_texts

    def counted(conn: Any, ids: list[str]) -> list[str]:
        read_back.append(ids)
        return load(conn, ids)

    monkeypatch.setattr(driver.event_records, "load_event_texts", counted)
    events = [{"name": "t/go", "data": {"k": "acme", "n": n}} for n in range(3)]
    ids = await platform.send_events(json.dumps(events).encode())

    async def ended() -> list[run_records.Run]:
        found = [
            run
            for event_id in ids
            for run in platform.db.read_sync(lambda c, e=event_id: run_records.runs_for_event(c, e))
        ]
        return found if len(found) == 3 and all(r.ended for r in found) else []

    for _ in range(200):
        if await ended():
            break
        await asyncio.sleep(0.02)
    runs = await ended()
    assert [r.status for r in runs] == ["COMPLETED"] * 3
    # two of them waited behind the lane's holder, and were handed it in turn
    sent = [body["event"]["data"]["n"] for body in app.bodies]
    assert sent == [0, 1, 2]
    assert [body["ctx"]["run_id"] for body in app.bodies] == [r.id for r in runs]
    assert read_back == []  # no call read its events back
