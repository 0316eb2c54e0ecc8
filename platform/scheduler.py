"""The scheduler: claims due items (within concurrency limits) and hands them to workers.

It sleeps until the earliest due item or until woken by a new enqueue; it never polls busily.
Leases of items in flight are extended while their calls run, so a slow step is not taken over,
while the items of a dead process become claimable once their leases run out.
"""

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field, replace

from sqlalchemy import Connection
from weir.platform.foundation.clock import Clock
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import QueueKind
from weir.platform.store import queue as q
from weir.platform.store.database import Database

log = logging.getLogger("weir.scheduler")
IDLE_MS = 1000  # the longest sleep: a safety net for wake-ups from other processes
# A lane due at the claim yet not claimed is held by another process's claimer (PostgreSQL
# skips locked lanes and keys): look again shortly rather than spin on it.
CONTENDED_MS = 10
UNCAPPED = 1 << 30  # the room of a lane of no app's (the timers')


@record
class Offer:
    """Room held for a claim made by another transaction: at most `size` items, passing over
    the lanes of the functions in `skip` (those of apps called as much as they may be)."""

    size: int
    skip: frozenset[str]


@dataclass
class AppRoom:
    """Each app's room for one claim (`queue.Room`), from counts copied when the claim was
    asked for: the claim runs on the writer thread while the event loop's counts move on
    (calls ending only leave more room than the copy says)."""

    cap: int  # calls an app may have in flight: `per_app`, less the workers offers hold
    calls: Counter[str]  # calls in flight per app, and what this claim has taken
    app_of: Callable[[str], str | None]
    # The same per function, within its app's: `share` is a function's (`Scheduler._share`)
    fn_calls: Counter[str] = field(default_factory=Counter)
    share: Callable[[str], int] = lambda app: UNCAPPED

    def left(self, function_id: str | None) -> int:
        app = self._app(function_id)
        if app is None or function_id is None:
            return UNCAPPED
        own = self.share(app) - self.fn_calls[function_id]
        return min(self.cap - self.calls[app], own)

    def took(self, function_id: str | None, count: int) -> None:
        app = self._app(function_id)
        if app is not None and function_id is not None:
            self.calls[app] += count
            self.fn_calls[function_id] += count

    def _app(self, function_id: str | None) -> str | None:
        return None if function_id is None else self.app_of(function_id)


class Scheduler:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        handle: Callable[[q.Claimed], Awaitable[q.Claimed | None]],
        *,
        workers: int = 128,
        lease_ms: int = 30_000,
        grace_s: float = 10.0,
        app_of: Callable[[str], str | None] = lambda function_id: None,
        functions_of: Callable[[str], Collection[str]] = lambda app: (),
        per_app: int = 0,
        per_function: int = 0,
        prefetch: Callable[[Connection, list[q.Claimed]], None] | None = None,
        paused: Callable[[], Collection[str]] = lambda: (),
    ) -> None:
        self.db, self.clock, self.handle = db, clock, handle
        # Called in the claim's transaction with what it claimed (the executor reads the
        # calls' state there, saving a read transaction per call).
        self.prefetch = prefetch
        self.workers, self.lease_ms, self.grace_s = workers, lease_ms, grace_s
        # At most `per_app` calls to one app at once (0: no cap), so that a hanging app holds
        # its share of the workers and the other apps are still served. `app_of`: the app of a
        # function (None: no app's, no cap).
        self.app_of, self.per_app = app_of, per_app
        # Within its app's cap, one function of an app with several holds at most
        # `per_function` calls (0: as many as the app), so that one function hanging leaves
        # the app's other functions calls of their own.
        self.per_function = per_function if 0 < per_function < per_app else per_app
        # An app's functions: a claim passes over all their lanes while the app is at its cap,
        # not only the lanes it has in flight (an app's work may lie in many lanes, one per
        # key, and a lane taken only to be handed back costs two transactions).
        self.functions_of = functions_of
        # The paused functions (the registry's, reloaded as the catalog changes): every claim
        # passes over their lanes, so their runs wait at their next step until resumed.
        self.paused = paused
        self.inflight: dict[int, q.Claimed] = {}
        # Calls in flight per app: kept as items come and go, so that the per-app cap costs
        # nothing per call however many calls are in flight.
        self._calls: Counter[str] = Counter()
        self._app_by_item: dict[int, str] = {}  # as counted (a reload may move a function)
        # The same per function, and the functions holding their whole share: kept as items
        # come and go, so the per-function share costs nothing per call either.
        self._fn_calls: Counter[str] = Counter()
        self._fns_full: set[str] = set()
        # Workers promised to claims under way (the scheduler's own, and offers): counted as
        # calls of every app, since what they will claim is not known yet.
        self._promised = 0
        self._claiming = 0  # workers the scheduler's own claim under way may fill
        self._starved = False  # the scheduler sleeps because offers hold every free worker
        self._wake = asyncio.Event()
        self._claimed_at = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False

    def wake(self) -> None:
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        keeper = asyncio.create_task(self._keep_leases(stop))
        try:
            while not stop.is_set():
                await self._tick(stop)
        finally:
            self._stopping = True  # a worker's next call, claimed with its last, is handed back
            await self._drain()  # the keeper still runs: calls finishing keep their leases
            keeper.cancel()

    async def _tick(self, stop: asyncio.Event) -> None:
        if self._all_busy():
            await self._sleep(stop, IDLE_MS)  # a finishing call wakes us
            return
        free = self._free()
        if free <= 0 or self._offers_hold_every_app():  # `adopt` wakes us
            self._starved = True
            await self._sleep(stop, IDLE_MS)
            return
        # Offers made meanwhile leave this claim's room alone. Each app's share of the claim
        # is its own room (`_room`): an app near its cap does not make the claim small.
        self._claiming = free
        try:
            claimed, due = await self._claim(free, self._full_functions(), self._room())
        finally:
            self._claiming = 0
        started, over = self._admit(claimed)
        for item in started:
            self._start(item)
        if over:  # claimed before its app filled up: back at once, its lane now passed over
            now = self.clock.now_ms()
            await self.db.write(lambda c: q.hand_back(c, over, now))
        if len(claimed) == free:
            return  # there may be more due right now
        await self._sleep(stop, self._idle_ms(due, contended=not claimed))

    def offer(self, most: int) -> Offer | None:
        """Room for up to `most` items that a transaction queuing work claims itself (an
        event's first calls), so they start without a claim and a wake-up of their own; None
        if there is none. The room is held until `adopt` is called with what was claimed:
        asking for no more than the work queued keeps the rest for the scheduler."""
        if self._stopping:
            return None
        size = min(most, self._claimable(self._claiming))
        if size <= 0:
            return None
        skip = frozenset(self._full_functions())
        self._promised += size
        return Offer(size, skip)

    def adopt(self, offer: Offer, items: list[q.Claimed]) -> None:
        """Start the items claimed under `offer` (none if its transaction failed), and release
        the room it held."""
        self._promised -= offer.size
        if self._starved:  # the scheduler waits for this room
            self._starved = False
            self.wake()
        if self._stopping:  # nothing new starts: back for another process to take at once
            if items:
                self._start_hand_back(items)
            return
        started, over = self._admit(items)
        for item in started:
            self._start(item)
        if over:
            self._start_hand_back(over)

    def _start_hand_back(self, items: list[q.Claimed]) -> None:
        task = asyncio.create_task(self._hand_back(items))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _hand_back(self, items: list[q.Claimed]) -> None:
        now = self.clock.now_ms()
        await self.db.write(lambda c: q.hand_back(c, items, now))

    def _free(self, claiming: int = 0) -> int:
        """Workers neither busy nor promised to offers or to `claiming` (the scheduler's own
        claim under way, for an offer)."""
        return max(0, self.workers - len(self.inflight) - self._promised - claiming)

    def _offers_hold_every_app(self) -> bool:
        """Offers under way hold every app's room (they count as calls of every app): a claim
        of ours could take no app's item."""
        return 0 < self.per_app <= self._promised

    def _room(self) -> AppRoom | None:
        """Each app's room for the scheduler's own claim: a claim never takes more of an app
        than it may call, so nothing is claimed only to be handed back (a start handed back
        would have spent its throttle slot and rolling-window charge on a call that never went
        out). Offers under way count as calls of every app."""
        if self.per_app <= 0:
            return None
        promised = self._promised
        return AppRoom(
            self.per_app - promised,
            Counter(self._calls),
            self.app_of,
            Counter(self._fn_calls),
            lambda app: self._share(app) - promised,
        )

    def _claimable(self, claiming: int = 0) -> int:
        """How many items an offer's claim (which takes no `AppRoom`) may take: the free
        workers, and no more than the busiest app that is not full has room for. Offers under
        way, and `claiming`, count as calls of every app."""
        promised = self._promised + claiming
        free = self._free(claiming)
        if self.per_app <= 0:
            return free
        # The apps an offer does not pass over (`_full_functions` counts `_promised` only):
        # each must have room for all of it, `claiming` counted too.
        open_apps = [n for n in self._calls.values() if n + self._promised < self.per_app]
        busiest = max(open_apps, default=0) + promised
        return max(0, min(free, self.per_app - busiest))

    def _app(self, item: q.Claimed) -> str | None:
        """The app an item calls (None for a timer)."""
        if item.kind != QueueKind.EXEC or item.function_id is None:
            return None
        return self.app_of(item.function_id)

    def _share(self, app: str) -> int:
        """The calls one function of `app` may hold: `per_function` when the app has other
        functions to leave room for, else the app's whole cap."""
        return self.per_function if len(self.functions_of(app)) > 1 else self.per_app

    def _at_share(self, app: str, calls: int) -> bool:
        """Whether a function of `app` holding `calls` holds its whole share (below
        `per_function` it is below every share: no lookup of the app's functions)."""
        return calls >= self.per_function and calls >= self._share(app)

    def _track(self, item: q.Claimed) -> None:
        """`item` is in flight from now on."""
        self.inflight[item.id] = item
        app = self._app(item)
        if app is not None and item.function_id is not None:
            self._app_by_item[item.id] = app
            self._calls[app] += 1
            fn = item.function_id
            self._fn_calls[fn] += 1
            if self._at_share(app, self._fn_calls[fn]):
                self._fns_full.add(fn)

    def _untrack(self, item: q.Claimed) -> None:
        if self.inflight.pop(item.id, None) is None:
            return
        app = self._app_by_item.pop(item.id, None)
        if app is not None:
            self._calls[app] -= 1
            if self._calls[app] <= 0:
                del self._calls[app]
            fn = item.function_id or ""
            self._fn_calls[fn] -= 1
            if self._fn_calls[fn] <= 0:
                del self._fn_calls[fn]
            if fn in self._fns_full and self._fn_calls[fn] < self._share(app):
                self._fns_full.discard(fn)

    def _app_calls(self) -> Counter[str]:
        return Counter(self._calls)

    def _full_functions(self, ending: q.Claimed | None = None) -> set[str]:
        """The functions of apps with `per_app` calls in flight, and those holding their own
        share (`_share`), not counting the call `ending` (whose transaction may pass its
        slots on to the next): not claimed until one ends. Calls promised to offers count as
        calls of every app, as in `_claimable` (an offer that takes a function past its share
        hands the extra back, `_admit`). The paused functions are passed over too."""
        paused = self.paused()
        if self.per_app <= 0:
            return set(paused)
        cap, promised = self.per_app, self._promised
        app_ending = self._app_by_item.get(ending.id) if ending is not None else None
        full = [app for app, n in self._calls.items() if n - (app == app_ending) + promised >= cap]
        skip = {fn for app in full for fn in self.functions_of(app)}
        if self._fns_full:
            skip |= self._fns_full
        fn = ending.function_id if ending is not None else None
        if (  # the ending call's own function, full only while that call is counted
            app_ending is not None
            and fn is not None
            and fn in self._fns_full
            and app_ending not in full
            and self._fn_calls[fn] - 1 < self._share(app_ending)
        ):
            skip.discard(fn)
        if paused:
            skip.update(paused)
        return skip

    def _admit(self, claimed: list[q.Claimed]) -> tuple[list[q.Claimed], list[q.Claimed]]:
        """The claimed items their apps have room for, and the rest."""
        if self.per_app <= 0:
            return claimed, []
        calls = self._app_calls()
        taken: dict[str, int] = {}  # what this claim takes, per function
        started, over = [], []
        for item in claimed:
            app, fn = self._app(item), item.function_id or ""
            own = self._fn_calls[fn] + taken.get(fn, 0)
            if app is not None and (calls[app] >= self.per_app or self._at_share(app, own)):
                over.append(item)
                continue
            if app is not None:
                calls[app] += 1
                taken[fn] = taken.get(fn, 0) + 1
            started.append(item)
        return started, over

    def _all_busy(self) -> bool:
        # Clear the wake flag first: a call finishing after the check sets it again, so the
        # sleep ends at once; a flag left over from an enqueue would make the loop spin.
        self._wake.clear()
        return len(self.inflight) >= self.workers

    async def _claim(
        self, free: int, skip: set[str], room: AppRoom | None = None
    ) -> tuple[list[q.Claimed], int | None]:
        self._wake.clear()
        return await self.db.write(lambda c: self._claim_now(c, free, skip, room))

    def _claim_now(
        self, conn: Connection, free: int, skip: set[str], room: AppRoom | None = None
    ) -> tuple[list[q.Claimed], int | None]:
        # A job that lost a race runs again: each attempt counts its takings from the copy.
        room = replace(room, calls=Counter(room.calls)) if room is not None else None
        # The time is read in the transaction, not when the job was queued: behind a busy
        # writer that can be a second earlier, and a throttle judged at a stale time lets
        # starts that waited in the queue go out together.
        now = self._claimed_at = self.clock.now_ms()
        claimed = q.claim(conn, now, free, self.lease_ms, skip, self.clock.now_ms, room)
        if claimed and self.prefetch is not None:
            self.prefetch(conn, claimed)
        return claimed, q.next_due(conn, skip)

    def _idle_ms(self, due: int | None, *, contended: bool) -> int:
        if due is None:
            return IDLE_MS
        if contended and due <= self._claimed_at:
            return CONTENDED_MS
        return max(0, min(IDLE_MS, due - self.clock.now_ms()))

    async def _sleep(self, stop: asyncio.Event, ms: int) -> None:
        if ms <= 0:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), ms / 1000)

    def _start(self, item: q.Claimed) -> None:
        self._track(item)
        task = asyncio.create_task(self._run_item(item))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_item(self, item: q.Claimed) -> None:
        """Work on the item, then on the next one its handler claimed with it (a run's next
        call): the same worker, so the worker and per-app counts hold throughout."""
        current: q.Claimed | None = item
        try:
            while current is not None:
                nxt = await self._handle_one(current)
                self._untrack(current)
                current = nxt
                if current is None:
                    break
                self._track(current)  # its lease is kept from now on
                if self._stopping:
                    break  # left in flight: the drain hands it back
                if not self._app_has_room(current):
                    await self._hand_back_over([current])
                    break
        finally:
            self.wake()

    def skip_functions(self, finishing: q.Claimed) -> set[str]:
        """The functions whose calls the transaction that ends `finishing` may not hand its
        worker (a hot key's next call, `queue.hand_on`): those of apps called as much as they
        may be, not counting `finishing`."""
        return self._full_functions(finishing)

    def _app_has_room(self, item: q.Claimed) -> bool:
        """`item`, already counted in flight, keeps its app within `per_app` calls."""
        app = self._app(item)
        if self.per_app <= 0 or app is None:
            return True
        own = self._fn_calls[item.function_id or ""]
        return self._calls[app] <= self.per_app and own <= self._share(app)

    async def _hand_back_over(self, items: list[q.Claimed]) -> None:
        for item in items:
            self._untrack(item)
        now = self.clock.now_ms()
        await self.db.write(lambda c: q.hand_back(c, items, now))

    async def _handle_one(self, item: q.Claimed) -> q.Claimed | None:
        try:
            return await self.handle(item)
        except Exception:
            log.exception("queue item %s (%s, run %s) failed", item.id, item.kind, item.run_id)
            return None

    async def _keep_leases(self, stop: asyncio.Event) -> None:
        while True:  # until cancelled, after the drain
            await asyncio.sleep(self.lease_ms / 3000)
            items = list(self.inflight.values())
            if items:
                await self._extend(items, self.clock.now_ms() + self.lease_ms)

    async def _extend(self, items: list[q.Claimed], until: int) -> None:
        await self.db.write(lambda c: q.extend(c, items, until))

    async def _drain(self) -> None:
        """Stopping: calls in flight may finish within the grace period; whatever is still
        held then is handed back, so another process takes it over at once."""
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=self.grace_s)
        left = list(self.inflight.values())
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)
        if left:
            now = self.clock.now_ms()
            returned = await self.db.write(lambda c: q.hand_back(c, left, now))
            log.info("shutdown: handed back %d unfinished items", returned)
