"""The scheduler's per-app cap on the real queue: an app with `per_app` calls hanging has its
other due items left in the queue (not claimed over and over), while another app's items run;
when one of its calls ends, the next of its items starts."""

import asyncio
from functools import partial
from typing import Any

from weir.platform.clock import SystemClock
from weir.platform.scheduler import Scheduler
from weir.platform.store import queue as q

from tests.support.store_kit import Store

APPS = {"fa": "A", "fb": "B"}


def exec_item(function_id: str) -> q.NewItem:
    return q.NewItem(
        kind="exec", available_at=0, score=0, lane=f"lane-{function_id}", function_id=function_id
    )


class Counting:
    """The store's Database, counting the write transactions (claims among them)."""

    def __init__(self, store: Store) -> None:
        self.db, self.writes = store.db, 0

    async def write(self, job: Any) -> Any:
        self.writes += 1
        return await self.db.write(job)


async def test_a_hanging_app_keeps_its_share_and_the_queue_is_not_churned(store: Store) -> None:
    for function_id in ("fa",) * 5 + ("fb",):
        store.write(partial(q.enqueue, item=exec_item(function_id)))
    hang, handled = asyncio.Event(), []

    async def handle(item: q.Claimed) -> None:
        handled.append(item.function_id)
        if item.function_id == "fa":
            await hang.wait()

    db = Counting(store)
    scheduler = Scheduler(
        db,  # type: ignore[arg-type]
        SystemClock(),
        handle,
        workers=4,
        grace_s=0.01,
        app_of=lambda item: APPS.get(item.function_id or ""),
        per_app=2,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run(stop))
    await asyncio.sleep(0.3)
    assert sorted(handled) == ["fa", "fa", "fb"]  # B ran; A holds its two workers only
    writes = db.writes
    await asyncio.sleep(0.5)
    assert db.writes - writes <= 1  # idle: A's three waiting items are not claimed again
    hang.set()  # A's calls end: its waiting items start, two at a time
    await asyncio.sleep(0.3)
    assert handled.count("fa") == 5
    stop.set()
    scheduler.wake()
    await asyncio.wait_for(task, 5)


async def test_a_claim_takes_no_more_of_an_app_than_it_may_call(store: Store) -> None:
    """Nothing is claimed only to be handed back: a start handed back would have spent its
    throttle slot or rolling-window charge for nothing."""
    for _ in range(6):
        store.write(partial(q.enqueue, item=exec_item("fa")))
    hang, claims = asyncio.Event(), []
    real_claim = q.claim

    def counting_claim(*args: Any, **kwargs: Any) -> list[q.Claimed]:
        claimed = real_claim(*args, **kwargs)
        claims.append(len(claimed))
        return claimed

    async def handle(item: q.Claimed) -> None:
        await hang.wait()

    scheduler = Scheduler(
        store.db,
        SystemClock(),
        handle,
        workers=8,
        grace_s=0.01,
        app_of=lambda item: APPS.get(item.function_id or ""),
        per_app=2,
    )
    stop = asyncio.Event()
    q.claim = counting_claim  # type: ignore[assignment]
    try:
        task = asyncio.create_task(scheduler.run(stop))
        await asyncio.sleep(0.3)
        assert sum(claims) == 2, claims  # two claimed and started, none handed back
        hang.set()
        await asyncio.sleep(0.5)
        assert sum(claims) == 6, claims
    finally:
        q.claim = real_claim  # type: ignore[assignment]
        stop.set()
        scheduler.wake()
        await asyncio.wait_for(task, 5)
