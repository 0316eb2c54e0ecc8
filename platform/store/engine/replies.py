"""How a writer thread hands a job's outcome back to whoever queued it.

A coroutine's job is answered on its own event loop: the writer sends one wake-up per group
of jobs and loop, and the loop settles the group's futures together. (Through
`asyncio.wrap_future` each job paid for a `concurrent.futures.Future`, its condition variable,
two chained callbacks and a wake-up of its own: about a tenth of Weir's CPU per run.) A
thread's job (`Database.write_sync`) is answered through a `concurrent.futures.Future`.
"""

import asyncio
import contextlib
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import field
from typing import Any

from weir.platform.foundation.record_type import record


@record(eq=False)
class LoopReply:
    """The answer to a coroutine waiting on `waiter`, which belongs to `loop`."""

    loop: asyncio.AbstractEventLoop
    waiter: asyncio.Future[Any]

    def start(self) -> bool:
        """False if the caller gave up (was cancelled) before its job ran: the job is
        skipped. Once it runs, it commits, even if the caller is cancelled meanwhile."""
        return not self.waiter.cancelled()


@record(eq=False)
class ThreadReply:
    """The answer to a thread blocked on `future`."""

    future: Future[Any] = field(default_factory=Future)

    def start(self) -> bool:
        return self.future.set_running_or_notify_cancel()


Reply = LoopReply | ThreadReply
Outcome = tuple[Reply, Any, BaseException | None]  # (to whom, the value, or the error)
_LoopOutcome = tuple[LoopReply, Any, BaseException | None]


def deliver(outcomes: Iterable[Outcome]) -> None:
    """Hand each outcome to its caller: threads at once, coroutines in one wake-up per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[_LoopOutcome]] = {}
    for reply, value, error in outcomes:
        if isinstance(reply, LoopReply):
            by_loop.setdefault(reply.loop, []).append((reply, value, error))
        else:
            _settle_thread(reply.future, value, error)
    for loop, batch in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop has closed: no one waits any more
            loop.call_soon_threadsafe(_settle_batch, batch)


def _settle_thread(future: Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():
        return  # cancelled before its job ran (a failed group answers every job it held)
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


def _settle_batch(batch: list[_LoopOutcome]) -> None:
    """On the callers' loop: set every waiter that is still waiting (not cancelled)."""
    for reply, value, error in batch:
        waiter = reply.waiter
        if waiter.done():
            continue
        if error is None:
            waiter.set_result(value)
        elif isinstance(error, StopIteration):  # a future refuses it: the rest would not hear
            waiter.set_exception(_stopped(error))
        else:
            waiter.set_exception(error)


def _stopped(error: StopIteration) -> RuntimeError:
    wrapped = RuntimeError(f"the job raised StopIteration: {error!r}")
    wrapped.__cause__ = error
    return wrapped
