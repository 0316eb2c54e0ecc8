"""The scheduler with a stub store: it claims only when a worker is free, never spins."""

import asyncio
from collections.abc import Callable
from typing import Any

from weir.platform.foundation.clock import SystemClock
from weir.platform.scheduler import Scheduler
from weir.platform.store import queue as q


def item(i: int) -> q.Claimed:
    return q.Claimed(
        id=i,
        kind="exec",
        run_id=f"r{i}",
        function_id="f",
        step_id="step",
        attempt=0,
        payload={},
        lane="l",
        token="t",
        keys=(),
        claimed_at=0,
    )


class StubDb:
    """Hands out the queued items; counts the claim transactions it was asked for."""

    def __init__(self, items: list[q.Claimed]) -> None:
        self.items, self.claims = items, 0

    async def write(self, job: Callable[[Any], Any]) -> Any:
        self.claims += 1
        return self._take(job)

    def _take(self, job: Callable[[Any], Any]) -> Any:
        taken, self.items = self.items[:1], self.items[1:]
        claims = any("claim" in name for name in job.__code__.co_names)
        return (taken, None) if claims else None


async def test_wakeups_while_every_worker_is_busy_do_not_make_it_claim() -> None:
    release = asyncio.Event()

    async def handle(_: q.Claimed) -> None:
        await release.wait()

    db = StubDb([item(1), item(2)])
    scheduler = Scheduler(db, SystemClock(), handle, workers=1)  # type: ignore[arg-type]
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run(stop))
    await asyncio.sleep(0.05)
    claims_while_busy = db.claims
    for _ in range(200):  # enqueues elsewhere keep waking it
        scheduler.wake()
        await asyncio.sleep(0)
    assert db.claims == claims_while_busy  # the one worker is busy: no claim at all
    release.set()
    await asyncio.sleep(0.05)
    assert db.claims > claims_while_busy  # a worker came free: it claimed the next item
    stop.set()
    scheduler.wake()
    await asyncio.wait_for(task, 5)
