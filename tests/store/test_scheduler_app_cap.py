"""The scheduler's per-app cap on the real queue: an app with `per_app` calls hanging has its
other due items left in the queue (not claimed over and over), while another app's items run;
when one of its calls ends, the next of its items starts."""

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

import pytest
from weir.platform.foundation.clock import SystemClock
from weir.platform.scheduler import Scheduler
from weir.platform.store import queue as q

from tests.support.store_kit import Store

APPS = {"fa": "A", "fb": "B", "fc": "C", "fm1": "M", "fm2": "M"}  # M: two functions


def exec_item(function_id: str, lane: str | None = None) -> q.NewItem:
    lane = lane or f"lane-{function_id}"
    return q.NewItem(kind="exec", available_at=0, score=0, lane=lane, function_id=function_id)


def app_of(function_id: str) -> str | None:
    return APPS.get(function_id)


def functions_of(app: str) -> list[str]:
    return [fn for fn, owner in APPS.items() if owner == app]


def capped(db: Any, handle: Any, workers: int, per_app: int, per_function: int = 0) -> Scheduler:
    """A scheduler over the store whose items' apps are APPS, with a per-app cap."""
    return Scheduler(
        db,
        SystemClock(),
        handle,
        workers=workers,
        grace_s=0.01,
        app_of=app_of,
        functions_of=functions_of,
        per_app=per_app,
        per_function=per_function,
    )


@contextlib.asynccontextmanager
async def running(scheduler: Scheduler) -> AsyncIterator[None]:
    """The scheduler's loop, for the block; stopped (its calls given their grace) after."""
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run(stop))
    try:
        yield
    finally:
        stop.set()
        scheduler.wake()
        await asyncio.wait_for(task, 5)


def counted_claims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many items each claim from now on took."""
    claims: list[int] = []
    real_claim = q.claim

    def counting_claim(*args: Any, **kwargs: Any) -> list[q.Claimed]:
        claimed = real_claim(*args, **kwargs)
        claims.append(len(claimed))
        return claimed

    monkeypatch.setattr(q, "claim", counting_claim)
    return claims


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
    async with running(capped(db, handle, workers=4, per_app=2)):
        await asyncio.sleep(0.3)
        assert sorted(handled) == ["fa", "fa", "fb"]  # B ran; A holds its two workers only
        writes = db.writes
        await asyncio.sleep(0.5)
        assert db.writes - writes <= 1  # idle: A's three waiting items are not claimed again
        hang.set()  # A's calls end: its waiting items start, two at a time
        await asyncio.sleep(0.3)
        assert handled.count("fa") == 5


async def test_a_claim_takes_no_more_of_an_app_than_it_may_call(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing is claimed only to be handed back: a start handed back would have spent its
    throttle slot or rolling-window charge for nothing."""
    for _ in range(6):
        store.write(partial(q.enqueue, item=exec_item("fa")))
    hang = asyncio.Event()

    async def handle(item: q.Claimed) -> None:
        await hang.wait()

    claims = counted_claims(monkeypatch)
    async with running(capped(store.db, handle, workers=8, per_app=2)):
        await _until(lambda: sum(claims) >= 2)  # on a loaded machine the first claim may lag
        await asyncio.sleep(0.3)
        assert sum(claims) == 2, claims  # two claimed and started, none handed back
        hang.set()
        await _until(lambda: sum(claims) >= 6)
        assert sum(claims) == 6, claims


async def _until(done: Callable[[], bool], timeout_s: float = 10.0) -> None:
    """Returns once `done()` holds, or at the deadline (the caller's assertion then says)."""
    for _ in range(int(timeout_s / 0.02)):  # polled: the counts come from patched claims
        if done():
            return
        await asyncio.sleep(0.02)


async def test_an_app_at_its_cap_has_none_of_its_many_lanes_claimed_and_handed_back(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An app's work in many lanes (one per concurrency key): while the app is called as much
    as it may be, a claim passes over every lane of its functions, not only those in flight,
    so none of its items is leased and handed back, and another app's item still runs."""
    for i in range(40):
        store.write(partial(q.enqueue, item=exec_item("fa", lane=f"key-{i}")))
    store.write(partial(q.enqueue, item=exec_item("fb")))  # behind all of A's lanes
    hang, handled, handed_back = asyncio.Event(), [], []
    real_hand_back = q.hand_back

    def counting_hand_back(conn: Any, items: list[q.Claimed], now: int) -> int:
        handed_back.extend(items)
        return real_hand_back(conn, items, now)

    async def handle(item: q.Claimed) -> None:
        handled.append(item.function_id)
        if item.function_id == "fa":
            await hang.wait()

    scheduler = capped(store.db, handle, workers=8, per_app=2)
    monkeypatch.setattr(q, "hand_back", counting_hand_back)
    async with running(scheduler):
        await asyncio.sleep(0.3)
        for _ in range(5):  # wake-ups (an enqueue, a call ending elsewhere) claim again
            scheduler.wake()
            await asyncio.sleep(0.02)
        assert sorted(handled) == ["fa", "fa", "fb"]
        assert handed_back == []
        hang.set()
        await asyncio.sleep(0.5)
        assert handled.count("fa") == 40


async def test_an_app_near_its_cap_does_not_make_the_claim_small_for_the_others(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each app's share of a claim is its own room: with A one call short of its cap, one
    claim still takes A's last call and B's whole share (not one item a claim)."""
    for _ in range(3):
        store.write(partial(q.enqueue, item=exec_item("fa")))
    hang, handled = asyncio.Event(), Counter[str]()

    async def handle(item: q.Claimed) -> None:
        handled[item.function_id or ""] += 1
        await hang.wait()

    claims = counted_claims(monkeypatch)
    scheduler = capped(store.db, handle, workers=8, per_app=4)
    async with running(scheduler):
        await asyncio.sleep(0.3)
        assert handled == {"fa": 3} and claims == [3]
        for function_id in ("fa",) * 2 + ("fb",) * 6:
            store.write(partial(q.enqueue, item=exec_item(function_id)))
        scheduler.wake()
        await asyncio.sleep(0.3)
        assert claims[1] == 5  # the five free workers: A's fourth call and four of B's
        assert handled == {"fa": 4, "fb": 4}  # each app at its cap, none over it
        hang.set()
        await asyncio.sleep(0.5)
        assert handled == {"fa": 5, "fb": 6}


def in_flight(function_id: str, item_id: int) -> q.Claimed:
    return q.Claimed(item_id, "exec", f"run-{item_id}", function_id, "step", 0, {}, "l", "t", (), 0)


async def test_while_offers_hold_every_app_s_room_the_scheduler_claims_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Free workers are not room: offers count as calls of every app, so with as many
    promised as an app may have, no claim of the scheduler's could take anything. It waits
    for `adopt` instead of claiming (and reading the due lanes) over and over."""
    for function_id in ("fa", "fb"):
        store.write(partial(q.enqueue, item=exec_item(function_id)))

    async def handle(item: q.Claimed) -> None:
        return None

    claims = counted_claims(monkeypatch)
    scheduler = capped(store.db, handle, workers=8, per_app=4)
    offer = scheduler.offer(4)
    assert offer is not None and offer.size == 4  # four workers are still free
    async with running(scheduler):
        await asyncio.sleep(0.3)
        assert claims == []
        scheduler.adopt(offer, [])
        await asyncio.sleep(0.3)
        assert sum(claims) == 2


def test_an_offer_is_no_larger_than_the_room_of_every_app_it_may_take() -> None:
    """An offer passes over the full apps only; every other app must have room for all of it,
    counting the workers the scheduler's own claim under way may fill."""

    async def handle(item: q.Claimed) -> None:
        return None

    scheduler = capped(None, handle, workers=8, per_app=4)
    for i, function_id in enumerate(("fa", "fa", "fc", "fc")):
        scheduler._track(in_flight(function_id, i))
    assert scheduler._claimable(claiming=2) == 0  # A and C, at 2 + 2, could each be filled
    assert scheduler._claimable(claiming=1) == 1
    assert scheduler._claimable() == 2


def claim_now(store: Store, size: int, skip: frozenset[str]) -> list[q.Claimed]:
    return store.write(lambda c: q.claim(c, 10**12, size, 30_000, skip))


async def test_an_offer_holds_its_room_until_adopted_and_keeps_the_cap(store: Store) -> None:
    """A transaction that queues work may claim it itself under an offer: while the offer is
    out, its room counts as calls of every app, so no claim (the scheduler's or another
    offer's) takes an app past its cap."""
    for function_id in ("fa",) * 5 + ("fb",) * 2:
        store.write(partial(q.enqueue, item=exec_item(function_id)))
    hang, handled = asyncio.Event(), []

    async def handle(item: q.Claimed) -> None:
        handled.append(item.function_id)
        await hang.wait()

    scheduler = capped(store.db, handle, workers=8, per_app=3)
    first = scheduler.offer(100)
    assert first is not None and first.size == 3  # an app may have 3 calls: no more
    second = scheduler.offer(100)
    assert second is None  # the room of every app is promised to the first
    taken = claim_now(store, first.size, first.skip)
    assert len(taken) == 3
    scheduler.adopt(first, taken)
    await asyncio.sleep(0.05)
    assert sorted(handled) == sorted(i.function_id for i in taken)
    assert {i.function_id for i in taken} == {"fa"}  # A's items were due first
    third = scheduler.offer(100)
    assert third is not None and third.skip == {"fa"}  # A is full: its lanes passed over
    more = claim_now(store, third.size, third.skip)
    assert [i.function_id for i in more] == ["fb", "fb"]
    scheduler.adopt(third, more)
    await asyncio.sleep(0.05)
    calls = Counter(APPS[f or ""] for f in handled)
    assert max(calls.values()) <= 3, calls
    hang.set()
    await asyncio.sleep(0.05)


async def test_an_offer_adopted_with_nothing_releases_its_room(store: Store) -> None:
    async def handle(item: q.Claimed) -> None:
        return None

    scheduler = Scheduler(store.db, SystemClock(), handle, workers=2)
    offer = scheduler.offer(100)
    assert offer is not None and offer.size == 2
    assert scheduler.offer(100) is None
    scheduler.adopt(offer, [])  # its transaction did not commit
    small = scheduler.offer(1)  # one event: room for one call, the rest left to the scheduler
    assert small is not None and small.size == 1
    assert scheduler._claimable() == 1
    scheduler.adopt(small, [])
    again = scheduler.offer(100)
    assert again is not None and again.size == 2
    scheduler.adopt(again, [])


async def test_a_scheduler_waiting_on_an_offers_room_is_woken_when_it_is_released(
    store: Store,
) -> None:
    store.write(partial(q.enqueue, item=exec_item("fa")))
    handled: list[str | None] = []

    async def handle(item: q.Claimed) -> None:
        handled.append(item.function_id)

    scheduler = Scheduler(store.db, SystemClock(), handle, workers=1, grace_s=0.01)
    offer = scheduler.offer(1)
    assert offer is not None  # the one worker is promised to a transaction under way
    stop = asyncio.Event()
    task = asyncio.create_task(scheduler.run(stop))
    await asyncio.sleep(0.1)
    assert handled == []  # no room for the scheduler's own claim
    scheduler.adopt(offer, [])  # that transaction claimed nothing
    await asyncio.sleep(0.2)  # far less than the scheduler's longest sleep (1 s)
    assert handled == ["fa"]
    stop.set()
    scheduler.wake()
    await asyncio.wait_for(task, 5)


async def test_one_function_holds_at_most_its_share_of_its_apps_calls(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Of app M's four calls, its function fm1 holds three while they hang: fm2, queued
    behind all of fm1's items, still gets the fourth, and nothing of fm1's is claimed past
    its share only to be handed back."""
    for i in range(8):
        store.write(partial(q.enqueue, item=exec_item("fm1", lane=f"key-{i}")))
    store.write(partial(q.enqueue, item=exec_item("fm2")))
    hang, handled, handed_back = asyncio.Event(), [], []
    real_hand_back = q.hand_back

    def counting_hand_back(conn: Any, items: list[q.Claimed], now: int) -> int:
        handed_back.extend(items)
        return real_hand_back(conn, items, now)

    async def handle(item: q.Claimed) -> None:
        handled.append(item.function_id)
        if item.function_id == "fm1":
            await hang.wait()

    scheduler = capped(store.db, handle, workers=8, per_app=4, per_function=3)
    monkeypatch.setattr(q, "hand_back", counting_hand_back)
    async with running(scheduler):
        await asyncio.sleep(0.3)
        for _ in range(5):  # wake-ups claim again: still nothing past the share
            scheduler.wake()
            await asyncio.sleep(0.02)
        assert sorted(handled) == ["fm1", "fm1", "fm1", "fm2"]
        assert handed_back == []
        hang.set()
        await asyncio.sleep(0.5)
        assert handled.count("fm1") == 8
