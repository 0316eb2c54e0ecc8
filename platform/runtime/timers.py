"""Timer items: due work that needs no call to an app (sleeps ending, wait and invoke
timeouts, cron ticks, flushes). Each is handled in one transaction."""

from collections.abc import Callable

from weir.platform.runtime import cron, invoke, waits
from weir.platform.runtime.runs import resolve_step
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store import records


def handle(tx: Tx, item: q.Claimed) -> None:
    q.finish(tx.conn, item, tx.now)
    handler = HANDLERS.get(item.kind)
    if handler is None:
        raise ValueError(f"no handler for queue item kind {item.kind!r}")
    handler(tx, item)


def _sleep_done(tx: Tx, item: q.Claimed) -> None:
    step_id = str(item.payload["step_id"])
    records.close_history(tx.conn, item.run_id or "", "sleep", step_id, "COMPLETED", tx.now)
    resolve_step(
        tx, item.run_id or "", step_id, None, op="Sleep", name=str(item.payload.get("name", ""))
    )


def _wait_timeout(tx: Tx, item: q.Claimed) -> None:
    waits.on_timeout(tx, item.run_id or "", str(item.payload["step_id"]))


def _invoke_timeout(tx: Tx, item: q.Claimed) -> None:
    invoke.on_timeout(tx, item.run_id or "", str(item.payload["step_id"]))


HANDLERS: dict[str, Callable[[Tx, q.Claimed], None]] = {
    "sleep": _sleep_done,
    "wait_timeout": _wait_timeout,
    "invoke_timeout": _invoke_timeout,
    "cron": cron.on_tick,
}


def register(kind: str, handler: Callable[[Tx, q.Claimed], None]) -> None:
    """Gates add their own timers (debounce, batch, cron, run timeouts)."""
    HANDLERS[kind] = handler
