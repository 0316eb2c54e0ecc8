"""Timer items: due work that needs no call to an app (sleeps ending, wait and invoke
timeouts, cron ticks, batch and debounce flushes, run timeouts). Each is handled in one
transaction. Every kind and its handler are in the one table below."""

from collections.abc import Callable

from weir.platform.foundation.vocabulary import HistoryKind, Opcode, QueueKind, StepStatus
from weir.platform.runtime import cron, pausing
from weir.platform.runtime.admission import admit
from weir.platform.runtime.flow import batch, debounce, fifo, timeouts
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.runs import resolve_step
from weir.platform.runtime.steps import invoke, waits
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import steps as step_records

Handler = Callable[[Tx, q.Claimed], None]


def handle(tx: Tx, item: q.Claimed) -> None:
    q.finish(tx.conn, item, tx.now)
    handler = HANDLERS.get(item.kind)
    if handler is None:
        raise ValueError(f"no handler for queue item kind {item.kind!r}")
    handler(tx, item)


def _sleep_done(tx: Tx, item: q.Claimed) -> None:
    step_id = str(item.payload["step_id"])
    step_records.close_history(
        tx.conn, item.run_id or "", HistoryKind.SLEEP, step_id, StepStatus.COMPLETED, tx.now
    )
    resolve_step(
        tx,
        item.run_id or "",
        step_id,
        None,
        op=Opcode.SLEEP,
        name=str(item.payload.get("name", "")),
    )


def _wait_timeout(tx: Tx, item: q.Claimed) -> None:
    waits.on_timeout(tx, item.run_id or "", str(item.payload["step_id"]))


def _invoke_timeout(tx: Tx, item: q.Claimed) -> None:
    invoke.on_timeout(tx, item.run_id or "", str(item.payload["step_id"]))


def _admitting(release: Callable[[Tx, q.Claimed], Candidate | None]) -> Handler:
    """A timer that lets a run out (a cron tick, a batch or debounce flush): admit it."""

    def handle(tx: Tx, item: q.Claimed) -> None:
        cand = release(tx, item)
        if cand is not None:
            admit(tx, cand)

    return handle


HANDLERS: dict[str, Handler] = {
    QueueKind.SLEEP: _sleep_done,
    QueueKind.WAIT_TIMEOUT: _wait_timeout,
    QueueKind.INVOKE_TIMEOUT: _invoke_timeout,
    QueueKind.CRON: _admitting(cron.on_tick),
    batch.TIMER: _admitting(batch.on_timer),
    debounce.TIMER: _admitting(debounce.on_timer),
    timeouts.TIMER: timeouts.on_timer,
    fifo.TIMER: fifo.on_timer,
    QueueKind.PAUSE_BOUND: pausing.on_bound,
}
