"""Pausing and resuming a function (docs/operations.md, Pausing a function).

While a function is paused no call of its runs is claimed: the claim passes over its lanes
(the scheduler adds the paused functions to the set it skips), so its runs wait where they
are, at their next step, and go on through every gate in their normal order on resume. What
happens to new events depends on the mode: `skip` (Inngest's) stores them, marks them
"skipped: function paused" and starts no run (`admission.admit`); `hold` starts the runs,
which wait like the rest. Cron ticks of a paused function start nothing in either mode
(`cron.on_tick`). The runs under way at the pause wait (`in_progress` pause) or are cancelled
at once (`cancel`); in skip mode waiting runs are cancelled once the pause outlives its bound.
"""

import logging
from datetime import UTC, datetime

from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import InProgress, PauseAction, PauseMode, QueueKind
from weir.platform.reads import bulk
from weir.platform.registry import Function
from weir.platform.runtime.runs import cancel_run, enqueue_timer
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import catalog, pauses
from weir.platform.store.records.pauses import FunctionPause, PauseChange
from weir.platform.store.views.queries import RunPage

log = logging.getLogger("weir.pauses")
MAX_ACTOR = 200
BOUND_ACTOR = "weir (the pause outlived its bound)"


class FunctionNotFound(LookupError):
    pass


class NotPaused(ValueError):
    """Resuming a function that is not paused."""


@record
class PauseAsked:
    ident: str  # the function's slug or id
    mode: PauseMode
    in_progress: InProgress
    actor: str
    bound_ms: int  # skip mode, runs left waiting: cancelled after this long


@record
class PauseDone:
    function_id: str
    slug: str
    pause: FunctionPause | None  # None: resumed
    cancelled: int  # runs cancelled by this change


def since(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def words(pause: FunctionPause) -> str:
    """How the pause reads wherever it is shown (a run's why-waiting, an event's outcome)."""
    return f"function paused ({pause.mode}) since {since(pause.paused_at)} by {pause.paused_by}"


def pause(tx: Tx, asked: PauseAsked) -> PauseDone:
    fn = _function(tx, asked.ident)
    pauses.get(tx.conn, fn.id)  # holds the function's pause row until the commit
    done = FunctionPause(fn.id, asked.mode, asked.in_progress, tx.now, asked.actor[:MAX_ACTOR])
    pauses.set_paused(tx.conn, done, _version_after(tx))
    cancelled = 0
    if asked.in_progress == InProgress.CANCEL:
        cancelled = cancel_all(tx, fn.id, f"cancelled: {words(done)}")
    elif asked.mode == PauseMode.SKIP:
        payload = {"function_id": fn.id, "paused_at": tx.now}
        at = tx.now + asked.bound_ms
        enqueue_timer(tx, QueueKind.PAUSE_BOUND, at, payload, dedupe=f"pause:{fn.id}:{tx.now}")
    change = PauseChange(
        fn.id, PauseAction.PAUSED, done.mode, done.in_progress, done.paused_by, tx.now, cancelled
    )
    pauses.record_change(tx.conn, change)
    log.info(
        "function %s paused (mode %s, runs under way: %s) by %s; %d runs cancelled",
        fn.slug,
        done.mode,
        done.in_progress,
        done.paused_by,
        cancelled,
    )
    return PauseDone(fn.id, fn.slug, done, cancelled)


def resume(tx: Tx, ident: str, actor: str) -> PauseDone:
    """Raises NotPaused (nothing changes then)."""
    fn = _function(tx, ident)
    if pauses.get(tx.conn, fn.id) is None:
        raise NotPaused(f"function {fn.slug!r} is not paused")
    pauses.clear(tx.conn, fn.id, _version_after(tx))
    who = actor[:MAX_ACTOR]
    change = PauseChange(fn.id, PauseAction.RESUMED, None, None, who, tx.now, 0)
    pauses.record_change(tx.conn, change)
    tx.enqueued += 1  # its runs' calls are claimable again: the scheduler looks
    log.info("function %s resumed by %s", fn.slug, who)
    return PauseDone(fn.id, fn.slug, None, 0)


def on_bound(tx: Tx, item: q.Claimed) -> None:
    """A skip-mode pause reached its bound: the runs it left waiting are cancelled, unless
    the function was resumed (or paused again: that pause has a bound of its own) meanwhile."""
    fn_id = str(item.payload["function_id"])
    current = pauses.get(tx.conn, fn_id)
    if current is None or current.paused_at != item.payload["paused_at"]:
        return
    if current.mode != PauseMode.SKIP or current.in_progress != InProgress.PAUSE:
        return
    cancelled = cancel_all(tx, fn_id, f"cancelled: {words(current)}, longer than its bound")
    change = PauseChange(fn_id, PauseAction.BOUND, None, None, BOUND_ACTOR, tx.now, cancelled)
    pauses.record_change(tx.conn, change)
    log.info("function %s: the pause outlived its bound; %d runs cancelled", fn_id, cancelled)


def cancel_all(tx: Tx, function_id: str, reason: str) -> int:
    """Cancel every unfinished run of the function, in this transaction."""
    cancelled = 0
    while True:
        ids = bulk.active_run_ids(tx.conn, RunPage(function_id=function_id))
        ended = sum(cancel_run(tx, run_id, reason) for run_id in ids)
        cancelled += ended
        if len(ids) < bulk.MAX_BULK or ended == 0:
            return cancelled


def _function(tx: Tx, ident: str) -> Function:
    fn = tx.registry.by_slug.get(ident) or tx.registry.by_id.get(ident)
    if fn is None or fn.archived:
        raise FunctionNotFound(f"no function {ident!r} is registered (see GET /v1/functions)")
    return fn


def _version_after(tx: Tx) -> int:
    """A time past the catalog's version, so that every process sees the change as new (two
    changes within one millisecond would otherwise read as one)."""
    return max(tx.now, catalog.catalog_version(tx.conn) + 1)
