"""Retention in the background: history older than the configured age is deleted in small
batches, each its own short transaction, with a pause between them so the writer serves the
scheduler and the API in between. Only finished runs go; an unfinished run keeps its events,
and an open batch or debounce window keeps the events its run will start with, however old.

A retention shorter than a declared batch or debounce window is refused (`window_problems`:
at start and at sync), so those windows keep past the cut-off only what a late timer left.
"""

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Iterator

from weir.platform.foundation.clock import Clock
from weir.platform.functions import FunctionConfig
from weir.platform.functions.parse.durations import format_duration
from weir.platform.functions.problems import Problem, SyncError
from weir.platform.registry import Registry
from weir.platform.store import retention
from weir.platform.store.database import Database
from weir.platform.store.flow import rolling_windows

log = logging.getLogger("weir.retention")
BATCH = 200  # rows per transaction: a few milliseconds of writer time
PAUSE_S = 0.05  # between batches while there is more to delete
IDLE_S = 300.0  # between sweeps once everything old is gone
# The shortest retention: an event is judged by the gate state read before its batch is
# deleted, so the transaction that stored it must have ended; an hour is beyond any.
MIN_KEEP_MS = 3600 * 1000


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
        # Read first, off the writer: only an event stored since can join a window, and it is
        # younger than `before` (MIN_KEEP_MS).
        held = await self.db.read(retention.held_by_gates)
        events = await self.db.write(
            lambda c: retention.delete_old_events(c, before, self.batch, held)
        )
        now = self.clock.now_ms()  # rolling-window scopes idle for a whole window count nothing
        idle = await self.db.write(lambda c: rolling_windows.sweep(c, now, self.batch))
        if runs or events:
            log.info("retention deleted old history", extra=_fields(runs, events, len(held)))
        return runs + events + idle


def window_problems(configs: Iterable[FunctionConfig], keep_ms: int) -> list[Problem]:
    """Each batch or debounce window longer than the retention `keep_ms` (0: keeps all)."""
    if keep_ms <= 0:
        return []
    return [
        Problem(
            config.slug,
            option,
            f"{format_duration(ms)} is longer than this Weir's retention of "
            f"{format_duration(keep_ms)} (--retention): the window's events would outlive it; "
            f"shorten the window, or give Weir a retention of at least {format_duration(ms)}",
        )
        for config in configs
        for option, ms in _windows(config)
        if ms > keep_ms
    ]


def refused_windows(configs: Iterable[FunctionConfig], keep_ms: int) -> None:
    """A sync declaring a window longer than the retention is refused (SyncError)."""
    problems = window_problems(configs, keep_ms)
    if problems:
        raise SyncError(problems)


def check_stored_windows(registry: Registry, keep_ms: int) -> None:
    """Weir does not start with a retention shorter than a stored function's window."""
    live = (fn.config for fn in registry.by_id.values() if not fn.archived)
    problems = window_problems(live, keep_ms)
    if problems:
        raise RetentionTooShort("; ".join(str(problem) for problem in problems))


class RetentionTooShort(ValueError):
    """The retention is shorter than a declared batch or debounce window."""


def _windows(config: FunctionConfig) -> Iterator[tuple[str, int]]:
    if config.batching is not None:
        yield "batchEvents.timeout", config.batching.timeout_ms
    if config.debounce is not None:
        yield "debounce.period", config.debounce.period_ms
        if config.debounce.timeout_ms is not None:
            yield "debounce.timeout", config.debounce.timeout_ms


def _fields(runs: int, events: int, held: int) -> dict[str, dict[str, int]]:
    return {"fields": {"runs_deleted": runs, "events_deleted": events, "events_held": held}}


async def _wait(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
