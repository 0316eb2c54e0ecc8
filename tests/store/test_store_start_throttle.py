"""The throttle checked on the start itself, at claim, against the rule (weir-semantics:
GCRA on starts, T = period / limit, τ = burst × T). A real start comes some time after its
reserved slot, so the rule judged on real starts is: at most limit + burst starts in any
window of one period, and the GCRA with 100 ms more tolerance (docs/semantics.md, Throttle).
Under that rule a claimer that is a little late loses nothing (the throttle keeps its rate),
and a backlog whose reserved slots all lie in the past (a restart, a stalled scheduler) still
goes one slot at a time, in order, also when several processes claim from one store. Time is
the store's `now`, given by each test."""

import bisect
from collections.abc import Sequence
from functools import partial

import pytest
from weir.platform.gates.throttle import ThrottleConfig
from weir.platform.store import queue as q
from weir.platform.store.flow import start_throttle

from tests.integration.audit import CLAIM_SLACK_MS, throttle_excess, window_peak
from tests.support.store_kit import Store, claim_from_two_processes, new_item

LIMIT, PERIOD = 10, 1_000  # T = 100 ms


def throttle_payload(limit: int = LIMIT, burst: int = 0) -> dict[str, object]:
    return start_throttle.payload(
        ThrottleConfig(period_ms=PERIOD, limit=limit, burst=burst), "k", "ab" * 16
    )


def enqueue(store: Store, slots: Sequence[int], limit: int = LIMIT, burst: int = 0) -> None:
    """Start items of one throttle key, each due at its reserved slot (queued in that order)."""
    payload = throttle_payload(limit, burst)
    for slot in slots:
        item = new_item("lane-t", score=slot, available_at=slot, payload=payload)
        store.write(partial(q.enqueue, item=item))


def claim_at_ticks(store: Store, ticks: Sequence[int], want: int) -> list[tuple[int, int]]:
    """A claimer that looks at each tick and claims what is due: (tick, item id) per start."""
    starts: list[tuple[int, int]] = []
    for now in ticks:
        claimed = store.write(lambda c, now=now: q.claim(c, now, 50, 10**9))
        starts += [(now, item.id) for item in claimed]
        if len(starts) >= want:
            break
    return starts


def greedy_under_the_rule(
    slots: Sequence[int], ticks: Sequence[int], limit: int, burst: int
) -> list[int]:
    """The rule's own schedule, worked out here from the rule, not from Weir's code: at each
    tick, due starts go in queue order while one more start leaves at most limit + burst in
    the period ending now and conforms to the GCRA with τ = burst × T + 100 ms."""
    interval = PERIOD / limit
    tau = burst * interval + CLAIM_SLACK_MS
    starts: list[int] = []
    tat = float("-inf")
    for now in ticks:
        while len(starts) < len(slots) and slots[len(starts)] <= now:
            in_period = len(starts) - bisect.bisect_right(starts, now - PERIOD)
            if in_period >= limit + burst or tat - now > tau:
                break
            starts.append(now)
            tat = max(tat, now) + interval
        if len(starts) == len(slots):
            break
    return starts


def test_a_throttle_claimed_late_keeps_its_rate(store: Store) -> None:
    """Slots 100 ms apart (as admission reserves them under overload), a claimer looking only
    every 30 ms: each start comes up to 29 ms late, by varying amounts. The rule lets every
    start go at the claimer's first look at which it allows it, so lateness costs at most one
    look per period (a start must wait for the one `limit` before it), not one per start: 100
    starts take about ten seconds, not the twelve a meter re-armed from each late start needs
    (it spaces them 120 ms apart)."""
    tick = 30
    slots = [100 * i for i in range(100)]
    ticks = range(0, 20_000, tick)
    enqueue(store, slots)
    starts = claim_at_ticks(store, ticks, len(slots))
    times = [at for at, _ in starts]
    assert times == greedy_under_the_rule(slots, ticks, LIMIT, 0)
    assert window_peak(times, PERIOD) <= LIMIT
    periods = len(slots) // LIMIT
    assert times[-1] - slots[-1] < (periods + 1) * tick, times  # late by a look per period
    assert [item_id for _, item_id in starts] == sorted(item_id for _, item_id in starts)


def test_a_stale_backlog_goes_one_slot_at_a_time_in_order(store: Store) -> None:
    """After a restart every reserved slot lies in the past: the rule lets the first start go
    with what the slack holds (one more slot), then about one every 100 ms, never more than
    ten in a second, and no attempt is burnt waiting."""
    slots = [100 * i for i in range(30)]
    enqueue(store, slots)
    ticks = range(60_000, 70_000, 5)
    first = store.write(lambda c: q.claim(c, 60_000, 50, 10**9))
    assert len(first) == 2
    waiting = store.rows("SELECT attempt, available_at FROM queue ORDER BY score")[2:]
    assert {attempt for attempt, _ in waiting} == {0}
    assert all(at > 60_000 for _, at in waiting)  # deferred, not polled
    assert store.write(lambda c: q.claim(c, 60_099, 50, 10**9)) == []
    starts = [(60_000, item.id) for item in first]
    starts += claim_at_ticks(store, ticks[1:], len(slots) - 2)
    times = [at for at, _ in starts]
    assert times == greedy_under_the_rule(slots, ticks, LIMIT, 0)
    assert window_peak(times, PERIOD) == LIMIT  # the slot taken at once is given back later
    assert throttle_excess(times, PERIOD, LIMIT, 0) == 0
    assert times[-1] < 60_000 + 3 * PERIOD  # thirty starts at ten a second
    assert [item_id for _, item_id in starts] == sorted(item_id for _, item_id in starts)


def test_with_a_burst_a_stale_backlog_keeps_both_checks(store: Store) -> None:
    """limit 2 per second, burst 1 (T = 500 ms): the GCRA alone would let a fourth start go
    within the first second (at 900 ms); the period window holds it to three."""
    slots = [10 * i for i in range(14)]
    enqueue(store, slots, limit=2, burst=1)
    ticks = range(60_000, 80_000, 50)
    starts = claim_at_ticks(store, ticks, len(slots))
    times = [at for at, _ in starts]
    assert times == greedy_under_the_rule(slots, ticks, 2, 1)
    assert times[:4] == [60_000, 60_000, 60_400, 61_000]
    assert window_peak(times, PERIOD) == 3
    assert throttle_excess(times, PERIOD, 2, 1) == 0
    assert sum(1 for t in times if 62_000 <= t < 66_000) == 8  # two per second


def test_an_idle_key_starts_at_once_then_at_its_slots(store: Store) -> None:
    """In normal running the claim decides nothing new: each start goes at its slot."""
    slots = [0, 100, 200, 300]
    enqueue(store, slots)
    starts = claim_at_ticks(store, range(0, 1_000, 10), len(slots))
    assert [at for at, _ in starts] == slots


@pytest.mark.parametrize("burst", [0, 1])
def test_two_processes_claiming_one_backlog_keep_the_rule(store: Store, burst: int) -> None:
    total = 30
    enqueue(store, [100 * i for i in range(total)], burst=burst)
    starts = claim_from_two_processes(
        store, total, start=60_000, step=5, max_items=8, lease_ms=10**9, tries=4_000
    )
    assert len(starts) == total
    assert len({item_id for _, item_id in starts}) == total  # each started once
    starts.sort()
    times = [at for at, _ in starts]
    assert window_peak(times, PERIOD) <= LIMIT + burst, times
    assert throttle_excess(times, PERIOD, LIMIT, burst) == 0, times
    assert [item_id for _, item_id in starts] == sorted(item_id for _, item_id in starts)
    # (How soon it went is not judged: the shared clock moves on while one process's claims
    # are skipped because the other holds the lane.)
