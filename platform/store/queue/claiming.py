"""The claim: lease due items partition by partition, within every key's room, the claim-time
start gates and a caller's own caps."""

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.store.engine import dialect, json_text
from weir.platform.store.flow import rolling_windows, start_throttle
from weir.platform.store.queue.items import NO_LIMITS, Claimed, SlotLimit, limits_from_json
from weir.platform.store.queue.leasing import due_items, lease_row
from weir.platform.store.queue.partition_rows import (
    MOVE_HEAD,
    PARK_AT_HEAD,
    earliest_slot_end,
    park,
    refresh_lane,
)
from weir.platform.store.queue.partitions import due_lanes
from weir.platform.store.queue.slot_rows import size_and_use

CLAIM_PASSES = 3  # looks at the due lanes per claim, while the lanes looked at fell short
# A claim stops taking rate-charged starts (a rolling window, a throttle) once this long has
# passed since it began. Their authorizations are dated when the claim began, and their runs
# start only at its commit: in a long claim (64 starts on a loaded PostgreSQL took up to 1.5 s)
# the first would be dated long before their runs start, and the next window's starts would
# follow right behind them. (Every start of a claim is judged at that one time: a start judged
# later than the claim read what is due could take the turn of one that fell due meanwhile.)
CHARGE_SPAN_MS = 50


@dataclass
class _Span:
    """When a claim began, and whether its rate-charged starts have taken CHARGE_SPAN_MS (never,
    without a clock: simulations and tests that pin the time)."""

    began: int
    clock: Callable[[], int] | None = None
    spent: bool = False
    # what the claim learned of the rolling-window scopes it decided, and has yet to write
    ledgers: rolling_windows.Ledgers = field(default_factory=rolling_windows.Ledgers)

    def charged(self) -> None:
        """A rate-charged start was decided: past the span, the claim takes no more."""
        if self.clock is not None:
            self.spent = self.clock() - self.began >= CHARGE_SPAN_MS


class Room(Protocol):
    """How many items of each function one claim may still take (a caller's own cap, such as
    the scheduler's calls per app, which the store does not know)."""

    def left(self, function_id: str | None) -> int:
        """Items of the function's lane the claim may still take (`function_id` None: the
        timers' lane)."""
        ...

    def took(self, function_id: str | None, count: int) -> None:
        """The claim took `count` items of the function."""
        ...


def claim(
    conn: Connection,
    now: int,
    max_items: int,
    lease_ms: int,
    skip: Collection[str] = (),
    clock: Callable[[], int] | None = None,
    room: Room | None = None,
) -> list[Claimed]:
    """Lease up to `max_items` due items, honouring every lane's concurrency limits; the lanes
    of the functions in `skip` (of apps this process calls as much as it may) are passed over,
    and of each other function no more than `room` leaves.

    A lane due by its row may give nothing: emptied or woken lanes are set right only when a
    claim looks at them (`finish`). When the lanes looked at fell short, the claim looks
    further (at most CLAIM_PASSES times), so that such lanes ahead of real work do not send
    a claim of one item (the next call taken where an answer is applied, an event's first
    call) away empty-handed. `clock` times its rate-charged starts (`CHARGE_SPAN_MS`)."""
    claimed: list[Claimed] = []
    seen: set[str] = set()
    span = _Span(now, clock)
    for _ in range(CLAIM_PASSES):
        wanted = max_items - len(claimed)
        if wanted <= 0:
            break
        asked = wanted + len(seen)  # the lanes already looked at may still be due
        rows = due_lanes(conn, now, asked, skip)
        fresh = [row for row in rows if row.lane not in seen]
        for lane_row in fresh:
            budget = max_items - len(claimed)
            if budget <= 0 or span.spent:
                break
            seen.add(lane_row.lane)
            if room is not None:
                budget = min(budget, room.left(lane_row.function_id))
                if budget <= 0:
                    continue  # its function's share of this claim is taken
            got = _claim_lane(conn, lane_row.lane, _limits(lane_row), span, budget, lease_ms)
            if room is not None and got:
                room.took(lane_row.function_id, len(got))
            claimed.extend(got)
        if len(rows) < asked or not fresh or span.spent:
            break  # every due lane has been looked at, or the charged starts took their time
    return claimed


def _limits(lane_row: Any) -> tuple[SlotLimit, ...]:
    if lane_row.limits == NO_LIMITS:
        return ()
    return limits_from_json(json_text.loads(lane_row.limits))


@record
class _Room:
    items: int  # how many items of the lane may take a slot of every key now
    tightest: str | None  # the key that allows no more than that (None: the budget did)
    tightest_empty: bool = False  # that key had no live slot: filled, all its slots are ours
    fenced: tuple[str, ...] = ()  # the keys whose live size is 1: each holder takes a fence


def _claim_lane(
    conn: Connection, lane: str, limits: tuple[SlotLimit, ...], span: _Span, budget: int, lease: int
) -> list[Claimed]:
    now = span.began
    room = _room(conn, lane, limits, now, budget)
    items = due_items(conn, lane, now, room.items) if room.items > 0 else []
    claimed: list[Claimed] = []
    for row in items:
        payload = json_text.loads(row.payload)
        throttled = start_throttle.window(payload)  # the throttle's period window
        verdict = rolling_windows.check(
            conn, row, payload, now, start_throttle.check, throttled, span.ledgers
        )
        if verdict.start:
            claimed.append(lease_row(conn, row, payload, limits, now, lease, room.fenced))
        elif verdict.defer_to is None:
            break  # another process is deciding this throttle key: leave the rest for now
        if rolling_windows.charges(payload, throttled):
            span.charged()
            if span.spent:
                break  # the rest start in a later claim, dated by its own time
    span.ledgers.flush(conn)  # the deferred items' due times, before the lane's head is read
    if room.items <= 0:
        return claimed
    # A claim that filled a key parks the lane at once, rather than finding the key full on its
    # next look; otherwise leased items (and deferred starts) moved the head later.
    filled = room.tightest if len(claimed) == room.items else None
    if claimed and filled is None:
        MOVE_HEAD.run(conn, {"b_lane": lane})
        return claimed
    # a key filled by this claim alone: its earliest slot ends when these leases do
    ends = now + lease if filled is not None and room.tightest_empty else None
    if claimed and filled is not None:  # the lane keeps items (these at least): one statement
        until = ends if ends is not None else earliest_slot_end(conn, filled, now)
        PARK_AT_HEAD.run(conn, {"b_lane": lane, "b_key": filled, "b_until": until})
        return claimed
    refresh_lane(conn, lane, park_on=filled, now=now, slot_end=ends)  # set, parked, or removed
    return claimed


def _room(
    conn: Connection, lane: str, limits: tuple[SlotLimit, ...], now: int, budget: int
) -> _Room:
    """Every key's slots are counted under its lock, keys in one fixed order (by hash), so
    claimers needing overlapping keys never wait for each other in a cycle; a slot of every
    key is taken in the same transaction, or none."""
    room, tightest, empty = budget, None, False
    fenced: list[str] = []
    for limit in sorted(limits):
        if limit.unlimited:
            continue
        if not dialect.try_lock(conn, dialect.SLOT_KEY, limit.key):
            return _Room(0, None)  # another process is counting this key: look again soon
        size, used = size_and_use(conn, limit, now)
        if size <= 0:
            continue
        if size == 1:
            fenced.append(limit.key)
        free = size - used
        if free <= 0:
            park(conn, lane, limit.key, now)
            return _Room(0, None)
        if free <= room:  # claiming `room` items fills this key
            room, tightest, empty = free, limit.key, used == 0
    return _Room(room, tightest, empty, tuple(fenced))
