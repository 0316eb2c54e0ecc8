"""A sync's functions admit events from the transaction after the sync's own: the registry is
swapped inside that transaction, not reloaded after its commit (an event accepted in between
was admitted by the old functions, and started nothing)."""

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from weir.platform.runtime import finish_hooks
from weir.platform.service import Platform
from weir.platform.settings import Settings
from weir.platform.store.records import runs as run_records

from tests.support.loopback_app import sync_payload

APP_URL = "http://127.0.0.1:9/api/inngest"  # never called: the runs are only admitted


@pytest.fixture
async def weir(tmp_path: Path) -> AsyncIterator[Platform]:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'weir.db'}", sqlite_synchronous="OFF")
    platform = Platform(settings)
    await platform.start()
    try:
        yield platform
    finally:
        await platform.stop()


def runs_of(weir: Platform, event_id: str) -> int:
    return len(weir.db.read_sync(lambda c: run_records.runs_for_event(c, event_id)))


async def test_an_event_queued_behind_a_sync_is_admitted_by_its_functions(
    weir: Platform,
) -> None:
    body = json.dumps({"name": "t/go", "data": {}}).encode()
    # The sync's transaction is queued to the writer first, the event's right behind it.
    sync = asyncio.create_task(weir.register(sync_payload(APP_URL)))
    await asyncio.sleep(0)
    [event_id] = await weir.send_events(body)
    await sync
    assert runs_of(weir, event_id) == 1


async def test_an_event_queued_behind_an_app_removal_starts_nothing(weir: Platform) -> None:
    await weir.register(sync_payload(APP_URL))
    body = json.dumps({"name": "t/go", "data": {}}).encode()
    removal = asyncio.create_task(weir.delete_app("loopback"))
    await asyncio.sleep(0)
    [event_id] = await weir.send_events(body)
    assert await removal is True
    assert runs_of(weir, event_id) == 0


async def test_a_reload_begun_before_a_sync_does_not_put_back_the_old_functions(
    weir: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reload (another process synced) reads the functions before this sync commits and
    # ends after it: what it read is older than what the sync installed.
    released, real_read = asyncio.Event(), weir.db.read

    async def read_then_wait(job):  # type: ignore[no-untyped-def]
        found = await real_read(job)
        await released.wait()
        return found

    monkeypatch.setattr(weir.db, "read", read_then_wait)
    reload = asyncio.create_task(weir.reload())
    await asyncio.sleep(0.1)  # its read is done, before the sync
    monkeypatch.setattr(weir.db, "read", real_read)
    await weir.register(sync_payload(APP_URL))
    released.set()
    await reload
    assert [fn.slug for fn in weir.registry.by_slug.values()] == ["go"]


async def test_a_reload_between_a_syncs_install_and_its_commit_does_not_win(
    weir: Platform,
) -> None:
    # The sync's transaction installs its functions, then waits for another job of its group
    # commit; a reload meanwhile (an item of a function this process does not know, or the
    # catalog poll) reads the functions as committed: without them.
    sync, commit = await installed_not_committed(weir)
    check = asyncio.create_task(weir.reload_if_changed())
    await asyncio.sleep(0.1)
    await commit()
    await asyncio.gather(sync, check)
    assert list(weir.registry.by_slug) == ["go"]
    [event_id] = await weir.send_events(json.dumps({"name": "t/go", "data": {}}).encode())
    assert runs_of(weir, event_id) == 1


async def test_a_sync_whose_caller_is_cancelled_still_leaves_its_functions_in_force(
    weir: Platform,
) -> None:
    # The caller goes away while the sync's job waits for its group's commit, and a reload
    # meanwhile reads the functions as committed (without the sync's): once the group commits,
    # the sync's functions are the ones in force.
    sync, commit = await installed_not_committed(weir)
    sync.cancel()
    check = asyncio.create_task(weir.reload_if_changed())
    await until(lambda: "go" not in weir.registry.by_slug)  # the reload put back the old ones
    await commit()
    await check
    with pytest.raises(asyncio.CancelledError):
        await sync
    assert list(weir.registry.by_slug) == ["go"]


class Failed(Exception):
    pass


async def test_a_sync_that_does_not_commit_puts_back_the_functions_before_the_next_job(
    weir: Platform, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sync installs its functions, then its job fails (what its runs' ends set off,
    # applied in the same transaction): the next job of its group must see the functions as
    # stored, not the uncommitted ones (before, they stayed until a reload on the event loop).
    first = threading.Event()
    before = asyncio.create_task(weir.db.write(lambda c: first.wait(10)))
    await asyncio.sleep(0.05)  # the writer runs `before` alone; the next two make one group

    def fail_once(tx: object) -> None:
        monkeypatch.undo()
        raise Failed("the sync's transaction does not commit")

    monkeypatch.setattr(finish_hooks, "settle", fail_once)
    sync = asyncio.create_task(weir.register(sync_payload(APP_URL)))
    await asyncio.sleep(0)
    probe = asyncio.create_task(weir.db.write(lambda c: sorted(weir.registry.by_slug)))
    await asyncio.sleep(0)
    first.set()
    with pytest.raises(Failed):
        await sync
    assert await probe == []
    await before
    assert list(weir.registry.by_slug) == []


async def installed_not_committed(
    weir: Platform,
) -> tuple[asyncio.Task[object], Callable[[], Awaitable[None]]]:
    """A sync whose job has installed its functions and waits for another job of its group
    to end before the group commits; the sync's task, and what lets the group commit."""
    first, holding = threading.Event(), threading.Event()
    before = asyncio.create_task(weir.db.write(lambda c: first.wait(10)))
    await asyncio.sleep(0.05)  # the writer runs `before` alone; the next two make one group
    sync = asyncio.create_task(weir.register(sync_payload(APP_URL)))
    await asyncio.sleep(0)
    held = asyncio.create_task(weir.db.write(lambda c: holding.wait(10)))
    await asyncio.sleep(0)
    first.set()
    await until(lambda: "go" in weir.registry.by_slug)  # installed, not committed

    async def commit() -> None:
        holding.set()
        await asyncio.gather(before, held)

    return sync, commit


async def until(holds: Callable[[], bool]) -> None:
    for _ in range(200):
        if holds():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")
