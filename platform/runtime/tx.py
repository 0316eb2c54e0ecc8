"""The context every state transition runs in: one connection inside one transaction."""

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.observability.notes import Note
from weir.platform.registry import Registry
from weir.platform.runtime.next_call import NextCall
from weir.platform.store.queue import Claimed
from weir.platform.store.records.runs import Run


@record
class Ended:
    """A run that ended in this transaction, whose consequences are still to apply."""

    run: Run  # its row as it was before it ended
    status: str
    output: Any
    error: dict[str, Any] | None
    http_status: int = 0
    no_retry: bool = False  # that answer said not to retry it (x-inngest-no-retry)


@dataclass
class Tx:
    conn: Connection
    now: int
    registry: Registry
    rng: random.Random = field(default_factory=random.Random)
    retry_delay_ms: int | None = None  # a fixed retry delay instead of the backoff table (dev)
    clock: Callable[[], int] | None = None  # times the charged starts of claims made here
    enqueued: int = 0  # items added: the scheduler is woken after the commit
    added_ids: list[int] = field(default_factory=list)  # of the items added, where known
    notes: list[Note] = field(default_factory=list)  # logged and counted after the commit
    # Runs ended here; `finish_hooks.settle` applies what that sets off before the commit.
    ended: list[Ended] = field(default_factory=list)
    # Of each run ended here, when the latest lease of its calls in flight ends (None: none
    # is), read as it ended: what a FIFO lane's handover waits for (`flow.fifo.leave`).
    calls_in_flight: dict[str, int | None] = field(default_factory=dict)
    # The trigger events of the runs created here (the executor keeps them for their calls).
    trigger_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The same of the runs created here waiting in their FIFO lanes, kept apart: their first
    # call may be far off (`Driver.remember_events`).
    held_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The trigger events of runs this transaction moves on, as the executor holds them from
    # their calls: a run's end builds its finished event without reading them back.
    known_events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # The sender's trace context (`traceparent`) of the events accepted here: the runs they
    # start carry it in their keys, and continue the sender's trace (reads/traces.py).
    trace: dict[str, str] | None = None
    # The call the caller takes next, if this transaction makes one (`continuation`).
    next_call: NextCall = field(default_factory=NextCall)

    def added(self, item_id: int) -> None:
        """An item was queued: the scheduler is to look after the commit."""
        self.enqueued += 1
        self.added_ids.append(item_id)

    def claimed_here(self, items: list[Claimed]) -> None:
        """This transaction claimed `items` itself. When they are every item added here, no
        scheduler needs waking for them (an empty claim would cost a transaction)."""
        taken = {item.id for item in items}
        if self.enqueued == len(self.added_ids) and taken.issuperset(self.added_ids):
            self.enqueued = 0
