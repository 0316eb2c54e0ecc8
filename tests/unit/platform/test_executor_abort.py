"""Aborting a call: `Driver.abort` cancels the worker's task while it waits for the answer,
and `_send` takes that cancellation back, so the worker goes on; a cancellation of the task
itself (shutdown) still ends it."""

import asyncio
from typing import Any

import pytest
from weir.platform.executor.driver import Driver
from weir.platform.store import queue as q

RUN = "R1"
ITEM = q.Claimed(1, "exec", RUN, "F", "step", 0, {}, "lane", "token", (), 0)


def driver(carry: Any) -> Driver:
    made = Driver(None, None, None, lambda: None)  # type: ignore[arg-type]
    made._carry = carry  # type: ignore[method-assign]
    return made


async def waiting_for_ever(*_: Any) -> str:
    await asyncio.Event().wait()
    return "never"


async def swallowing_the_cancel(*_: Any) -> str:
    """As `asyncio.wait_for` on Python 3.11 does when its answer came as it was cancelled."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        return "the answer"
    return "never"


async def sent(made: Driver) -> asyncio.Task[Any]:
    task = asyncio.ensure_future(made._send(ITEM, None, b"", {}))  # type: ignore[arg-type]
    for _ in range(3):
        await asyncio.sleep(0)  # the request is under way
    assert made.calling(RUN)
    return task


async def test_an_aborted_call_returns_nothing_and_leaves_its_task_uncancelled() -> None:
    made = driver(waiting_for_ever)
    task = await sent(made)
    made.abort(RUN)
    assert await task is None
    assert task.cancelling() == 0 and not made.calling(RUN)


async def test_an_abort_swallowed_on_the_way_is_taken_back_too() -> None:
    made = driver(swallowing_the_cancel)
    task = await sent(made)
    made.abort(RUN)
    assert await task == "the answer"
    assert task.cancelling() == 0  # a later abort of this worker is not taken for a shutdown


async def test_a_cancelled_task_stays_cancelled_even_when_its_call_is_aborted_too() -> None:
    made = driver(waiting_for_ever)
    task = await sent(made)
    task.cancel()  # shutdown
    made.abort(RUN)
    with pytest.raises(asyncio.CancelledError):
        await task
