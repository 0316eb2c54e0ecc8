"""Flow-control gates around run creation, in docs/semantics.md order. Each gate loads its
state from the store, asks the pure algorithm in `weir.platform.gates`, and stores the answer.

A pre-run gate returns True to let the candidate go on, False when it took the event (skipped,
merged into a batch or a debounce window); it records why on the event.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from weir.platform.runtime import (
    flow_batch,
    flow_cancel,
    flow_debounce,
    flow_event_id,
    flow_limits,
    flow_singleton,
    flow_support,
    flow_timeouts,
    timers,
)
from weir.platform.runtime.runs import RunPlan
from weir.platform.runtime.tx import Tx

if TYPE_CHECKING:
    from weir.platform.runtime.admission import Candidate

Gate = Callable[[Tx, "Candidate"], bool]

PRE_RUN_GATES: list[Gate] = [
    flow_batch.gate,
    flow_event_id.gate,
    flow_limits.idempotency_gate,
    flow_limits.rate_limit_gate,
    flow_debounce.gate,
    flow_singleton.gate,
]


def place_start(tx: Tx, cand: "Candidate", plan: RunPlan) -> RunPlan:
    """When the run may start (throttle slot); unchanged without a throttle."""
    plan = flow_singleton.with_key(cand, plan)
    plan = flow_limits.place_throttled(tx, cand, plan)
    return flow_support.with_late_warnings(cand, plan)


def after_create(tx: Tx, cand: "Candidate", run_id: str) -> None:
    """Claims that name the new run, cancel-on subscriptions and the run's timeouts."""
    flow_event_id.claim(tx, cand, run_id)
    flow_limits.claim_idempotency(tx, cand, run_id)
    flow_singleton.take_lock(tx, cand, run_id)
    flow_cancel.subscribe(tx, cand, run_id)
    flow_timeouts.arm(tx, cand, run_id)


def after_finish(tx: Tx, run: Any) -> None:
    """Release what a run held for its whole life (its singleton lock)."""
    flow_singleton.release(tx, run)


for _kind, _handler in (
    (flow_debounce.TIMER, flow_debounce.on_timer),
    (flow_batch.TIMER, flow_batch.on_timer),
    (flow_timeouts.TIMER, flow_timeouts.on_timer),
):
    timers.register(_kind, _handler)
