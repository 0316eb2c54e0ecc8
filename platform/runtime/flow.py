"""Flow-control gates around run creation, in DESIGN.md's order. Each gate here loads its
state from the store, asks the pure algorithm in `weir.platform.gates`, and stores the answer.

A pre-run gate returns True to let the candidate go on, False when it took the event (skipped,
merged into a batch or a debounce window); it records why on the event.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING

from weir.platform.runtime.runs import RunPlan
from weir.platform.runtime.tx import Tx

if TYPE_CHECKING:
    from weir.platform.runtime.admission import Candidate

Gate = Callable[[Tx, "Candidate"], bool]

PRE_RUN_GATES: list[Gate] = []


def place_start(tx: Tx, cand: "Candidate", plan: RunPlan) -> RunPlan:
    """When the run may start (throttle slot); unchanged without a throttle."""
    return plan


def after_create(tx: Tx, cand: "Candidate", run_id: str) -> None:
    """Cancel-on subscriptions and the start timeout of a new run."""


def after_finish(tx: Tx, run: object) -> None:
    """Release what a run held for its whole life (its singleton lock)."""
