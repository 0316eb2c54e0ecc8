"""Work taken by the transaction that makes it due: the worker that applied an app's answer
goes on to the next call made there, and an event's first calls are claimed where the event is
accepted.

The worker is free once the answer is applied, so it takes its next item in the transaction
that freed it when that item is already known there: the run's own next call when nothing
stands in its way (`runs.enqueue_call`). What the run's end sets off (`finish_hooks.settle`:
the next run of its FIFO lane, a singleton's release) is applied first, so a lane hands over
to the worker with no claim in between. A finished call's concurrency slots go the same way:
kept, not freed, they pass to the next call of its queue lane (`queue.hand_on`), so a hot
key's runs follow each other with no wake, claim and re-park of the lane in between.

Any other due work is left to the scheduler's claim, woken as the worker ends: one claim takes
items for every worker freed by a group commit, each app's within its own room under the
per-app cap (`scheduler.AppRoom`). A claim of one item per freed worker, here,
cost five statements an item (the due lanes twice, the lane's items, the lease, the lane's
head); one claim of thirty costs about one and a tenth (bench/RESULTS.md, session 17).
"""

from collections.abc import Collection

from weir.platform.executor.response import Outcome, Timing
from weir.platform.registry import Function
from weir.platform.runtime import finish_hooks, outcomes
from weir.platform.runtime.next_call import NextCall
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q


def apply_answer(
    tx: Tx,
    item: q.Claimed,
    fn: Function,
    outcome: Outcome,
    timing: Timing,
    *,
    lease_ms: int,
    skip: Collection[str] = (),
    take_next: bool = True,
    held: bool = False,
) -> q.Claimed | None:
    """Apply `outcome` to `item`'s run; the item the caller works on next, leased to it, if
    the transaction made one (the run's next call, a lane's next run or next call). `skip`:
    functions whose calls the caller may not take (of apps it calls as much as it may);
    `take_next`: False when the caller stops (it only takes the run's own next call, which
    the stopping scheduler hands back); `held`: the function is paused, so not even the run's
    own next call is taken (it waits in the queue, passed over by the claim, until resumed)."""
    tx.next_call = NextCall(None if held else item.run_id, take_next, lease_ms)
    outcomes.apply(tx, item, fn, outcome, timing)
    finish_hooks.settle(tx)
    if tx.next_call.claimed is not None or not take_next:
        _free_kept(tx)
        return tx.next_call.claimed
    nxt = _hand_on(tx, lease_ms, skip)
    if nxt is not None:
        tx.claimed_here([nxt])
    return nxt


def take_due(
    tx: Tx, now: int, size: int, lease_ms: int, skip: Collection[str] = ()
) -> list[q.Claimed]:
    """In a transaction that has just queued work (an event's first calls), claim up to
    `size` due items for the caller to start at once, as the scheduler's claim would after
    the commit: one transaction and one wake-up fewer between an event and its first call.
    `now`: the time read after the transaction's own work, not `tx.now`. On PostgreSQL that
    work may have waited for a lock (a FIFO lane whose holder was ending in another process),
    and a start dated before the wait would precede the end it waited for."""
    if tx.enqueued == 0 or size <= 0:
        return []
    claimed = q.claim(tx.conn, max(now, tx.now), size, lease_ms, skip, tx.clock)
    tx.claimed_here(claimed)
    return claimed


def _hand_on(tx: Tx, lease_ms: int, skip: Collection[str]) -> q.Claimed | None:
    """The next call of the finished call's lane, holding the slots that call kept, if it may
    start now (`queue.hand_on`); the kept slots are freed otherwise."""
    going = tx.next_call
    kept = going.slots_kept
    if kept is None or kept.function_id in skip:  # an app at its cap: the claim decides
        _free_kept(tx)
        return None
    going.slots_kept = None
    return q.hand_on(tx.conn, kept, tx.now, lease_ms)


def _free_kept(tx: Tx) -> None:
    going = tx.next_call
    kept, going.slots_kept = going.slots_kept, None
    if kept is not None:
        q.release_slots(tx.conn, kept.id, kept.keys, tx.now, own_lane=kept.lane)
