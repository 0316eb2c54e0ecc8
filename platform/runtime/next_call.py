"""The call a worker takes next, decided inside the transaction that applies an app's answer.

A worker that applied an answer may go on to the next call made in the same transaction
(`continuation.apply_answer`): the run's own next call, or the first call of its FIFO lane's
next run. What that needs is carried in one record, `NextCall`, set by `continuation` and read
by the modules that queue the call (`runs.enqueue_call`, `outcomes`, `flow.fifo`). A
transaction that continues no call (an event's admission, a timer) keeps the empty record,
so nothing is claimed for a caller there.
"""

from dataclasses import dataclass

from weir.platform.store.queue import Claimed
from weir.platform.store.records.runs import Run


@dataclass(slots=True)
class NextCall:
    """Mutable for the one transaction that owns it."""

    run_id: str | None = None  # the run whose next call this transaction may claim
    takes_next: bool = False  # the caller may go on to a call made here at all
    lease_ms: int = 0  # the lease the claimed call gets
    claimed: Claimed | None = None  # the call claimed so, if any
    # The caller's finished call, kept until the run's next call is made here: that call
    # takes its row (`queue.enqueue_in_place`); `outcomes._apply_ops` finishes it otherwise.
    spare: Claimed | None = None
    # The caller's finished call whose concurrency slots pass on to its partition's next call
    # (`continuation.apply_answer`), rather than being freed.
    slots_kept: Claimed | None = None
    # The claimed call's run as this transaction left it, when one step's save was its only
    # change: the call's state needs no second read of the row (`runs.resolve_step`).
    run: Run | None = None

    def keeps_slots(self, item: Claimed) -> bool:
        """Whether finishing `item` keeps its slots for the call this caller takes next."""
        return self.takes_next and bool(item.keys) and item.run_id == self.run_id
