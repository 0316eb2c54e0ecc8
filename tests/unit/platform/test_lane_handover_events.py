"""A run that waited in its FIFO lane makes its first call with the trigger events the executor
kept when the run was created: the handover reads no event back from the store, and the call
still carries the run's own event."""

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from weir.platform.executor import driver
from weir.platform.service import Platform
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records

from tests.support.loopback_app import App, platform_with_app


@pytest.fixture
async def weir(tmp_path: Path) -> AsyncIterator[tuple[Platform, App]]:
    async with platform_with_app(tmp_path, {"lane": {"key": "event.data.k"}}) as made:
        yield made


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
