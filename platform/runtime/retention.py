"""Retention in the background: history older than the configured age is deleted in small
batches, each its own short transaction, with a pause between them so the writer serves the
scheduler and the API in between. Only finished runs go; an unfinished run keeps its events."""

import asyncio
import contextlib
import logging

from weir.platform.foundation.clock import Clock
from weir.platform.store import retention
from weir.platform.store.database import Database
from weir.platform.store.flow import rolling_windows

log = logging.getLogger("weir.retention")
BATCH = 200  # rows per transaction: a few milliseconds of writer time
PAUSE_S = 0.05  # between batches while there is more to delete
IDLE_S = 300.0  # between sweeps once everything old is gone


class Retention:
    def __init__(self, db: Database, clock: Clock, keep_ms: int, *, batch: int = BATCH) -> None:
        self.db, self.clock, self.keep_ms, self.batch = db, clock, keep_ms, batch

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                removed = await self.step()
            except Exception:  # a failed batch is tried again on the next sweep
                log.exception("retention batch failed")
                removed = 0
            await _wait(stop, PAUSE_S if removed else IDLE_S)

    async def step(self) -> int:
        """One batch of old runs and one of old events; how many rows went."""
        before = self.clock.now_ms() - self.keep_ms
        runs = await self.db.write(lambda c: retention.delete_old_runs(c, before, self.batch))
        events = await self.db.write(lambda c: retention.delete_old_events(c, before, self.batch))
        now = self.clock.now_ms()  # rolling-window scopes idle for a whole window count nothing
        idle = await self.db.write(lambda c: rolling_windows.sweep(c, now, self.batch))
        if runs or events:
            log.info("retention deleted old history", extra=_fields(runs, events))
        return runs + events + idle


def _fields(runs: int, events: int) -> dict[str, dict[str, int]]:
    return {"fields": {"runs_deleted": runs, "events_deleted": events}}


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
