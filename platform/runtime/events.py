"""Accepting events: store them, admit runs, resume waits and cancel subscriptions.

All of it happens in the transaction that stores the events, so an accepted event and
everything it caused commit together or not at all.
"""

import asyncio
import functools
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from weir.expressions import Expression, NotHeld, current_budget
from weir.platform.foundation.ids import new_id
from weir.platform.ingest.validate import IncomingEvent, event_payload
from weir.platform.observability import notes
from weir.platform.registry import Registry
from weir.platform.runtime import admission, keys
from weir.platform.runtime.admission import admit_event
from weir.platform.runtime.steps import waits
from weir.platform.runtime.tx import Tx
from weir.platform.store.records import events as event_records
from weir.platform.store.records import waits as wait_records
from weir.platform.store.records.waits import Wait


def accept(tx: Tx, incoming: list[IncomingEvent]) -> list[str]:
    stored = [_stored(tx, event) for event in incoming]
    event_records.insert_events(tx.conn, stored)
    open_waits: dict[str, list[Wait]] = {}  # by event name: all arrived at `tx.now`
    for before, event in zip(incoming, stored, strict=True):
        tx.notes.append(
            notes.Note(notes.EVENT_ACCEPTED, event_id=event.id, fields={"name": event.name})
        )
        if before.evaluated and before.raw is None:  # a small event, foreseen off the writer
            with keys.foreseen(event.payload, before.evaluated):
                admit_event(tx, event.id, event.payload, event.received_at)
        else:
            admit_event(tx, event.id, event.payload, event.received_at)
        found = open_waits.get(event.name)
        if found is None:  # a wait opened by this transaction is not older than the events
            found = wait_records.waits_for_event(tx.conn, event.name, event.received_at)
            open_waits[event.name] = found
        waits.match_event(tx, event.id, event.payload, found)
    return [event.id for event in stored]


def foresee(
    registry: Registry,
    event: IncomingEvent,
    evaluate: Callable[[Expression], Any],
    parse_ms: float = 0.0,
) -> dict[str, tuple[Any, float]]:
    """Admission's costly evaluations over `event`, made before its transaction
    (`admission.foresee`); they go with it as `IncomingEvent.evaluated`."""
    unknown = frozenset() if event.user_id else frozenset({"id"})  # made when it is stored
    # A key of its own: expressions' worker processes cache documents by it.
    payload = event_payload(event, f"foreseen-{uuid.uuid4().hex}")
    return admission.foresee(registry, payload, evaluate, unknown, parse_ms)


async def foresee_costly(registry: Registry, incoming: list[IncomingEvent]) -> list[IncomingEvent]:
    """The events, each small one whose admission would make a costly evaluation (by the
    weight rule: not `Expression.is_cheap`) with those made now, in a thread of its own, so
    that the writer never waits on CEL whatever the event's size (large ones are foreseen
    where they are parsed). An event meeting no expression costs a dict lookup."""
    costly = [i for i, event in enumerate(incoming) if _costly(registry, event)]
    if not costly:
        return incoming
    loop = asyncio.get_running_loop()
    made = await asyncio.gather(
        *(loop.run_in_executor(_foresight(), _foreseen, registry, incoming[i]) for i in costly)
    )
    ahead = list(incoming)
    for i, event in zip(costly, made, strict=True):
        ahead[i] = event
    return ahead


def _costly(registry: Registry, event: IncomingEvent) -> bool:
    if event.raw is not None:
        return False
    expressions = admission.declared(registry, event.name)
    if not expressions:
        return False
    activation = {"event": event_payload(event, "")}
    return not all(expression.is_cheap(activation) for expression in expressions)


def _foreseen(registry: Registry, event: IncomingEvent) -> IncomingEvent:
    return replace(event, evaluated=foresee(registry, event, _usual_way))


def _usual_way(expression: Expression) -> Any:
    """A small event is held by no worker: Foresight evaluates it as the writer would have
    (`Expression.evaluate`: in a CEL worker, under the budget)."""
    raise NotHeld("a small event is evaluated the usual way")


@functools.cache
def _foresight() -> ThreadPoolExecutor:
    # As many threads as CEL workers: more would wait for a worker, against the budget.
    workers = current_budget().workers
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="weir-foresight")


def _stored(tx: Tx, event: IncomingEvent) -> event_records.StoredEvent:
    event_id = new_id(tx.now)
    return event_records.StoredEvent(
        id=event_id,
        name=event.name,
        user_id=event.user_id,
        ts=event.ts,
        received_at=tx.now,
        payload=event_payload(event, event_id),
    )


def emit(tx: Tx, name: str, data: dict[str, Any], *, user_id: str | None = None) -> str:
    """Store and dispatch one of Weir's own events (inngest/...)."""
    event = IncomingEvent(name=name, data=data, user_id=user_id, ts=tx.now, user={}, v=None)
    return accept(tx, [event])[0]
