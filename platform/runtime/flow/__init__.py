"""Flow-control gates around run creation, in docs/semantics.md order. Each gate loads its
state from the store, asks the pure algorithm in `weir.platform.gates`, and stores the answer.

A pre-run gate returns True to let the candidate go on, False when it took the event (skipped,
merged into a batch or a debounce window); it records why on the event. Runs it lets out
meanwhile (a filled batch, a due debounce window) go on `Candidate.released` for admission.
"""

from collections.abc import Callable

from weir.platform.gates import cancel_on
from weir.platform.runtime import cancellation
from weir.platform.runtime.flow import (
    batch,
    counting,
    debounce,
    event_id,
    fifo,
    gate_io,
    rolling,
    singleton,
    timeouts,
)
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.runs import RunPlan
from weir.platform.runtime.tx import Tx
from weir.platform.store.records.runs import Run

Gate = Callable[[Tx, Candidate], bool]

# The one ordered list of pre-run gates (docs/semantics.md order).
PRE_RUN_GATES: tuple[Gate, ...] = (
    batch.gate,
    event_id.gate,
    counting.idempotency_gate,
    counting.rate_limit_gate,
    debounce.gate,
    singleton.gate,
)


def place_start(tx: Tx, cand: Candidate, plan: RunPlan) -> RunPlan:
    """When the run may start (throttle slot, FIFO lane), and the start checks its claim makes
    (throttle, rolling windows); unchanged without them."""
    plan = singleton.with_key(cand, plan)
    plan = counting.place_throttled(tx, cand, plan)
    plan = rolling.place_windows(cand, plan)
    plan = fifo.place(tx, cand, plan)
    return gate_io.with_late_warnings(cand, plan)


def after_create(tx: Tx, cand: Candidate, run_id: str) -> None:
    """Claims that name the new run, cancel-on subscriptions and the run's timeouts."""
    event_id.claim(tx, cand, run_id)
    counting.claim_idempotency(tx, cand, run_id)
    singleton.take_lock(tx, cand, run_id)
    _subscribe_cancel_on(tx, cand, run_id)
    timeouts.arm(tx, cand, run_id)


def after_finish(tx: Tx, run: Run) -> None:
    """Release what a run held for its whole life (its singleton lock, its FIFO lane)."""
    singleton.release(tx, run)
    fifo.leave(tx, run)


def _subscribe_cancel_on(tx: Tx, cand: Candidate, run_id: str) -> None:
    """The new run subscribes to the events that may cancel it (matched in `cancellation`);
    each subscription expires `timeout` after the run was scheduled."""
    for entry in cand.fn.config.cancel_on:
        expires = cancel_on.expires_at_ms(tx.now, entry.timeout_ms)
        cancellation.subscribe(tx, run_id, entry.event, entry.if_expr, expires)
