"""Accepting events: store them, admit runs, resume waits and cancel subscriptions.

All of it happens in the transaction that stores the events, so an accepted event and
everything it caused commit together or not at all.
"""

import uuid
from collections.abc import Callable
from typing import Any

from weir.expressions import Expression
from weir.platform.foundation.ids import new_id
from weir.platform.ingest.validate import IncomingEvent, event_payload
from weir.platform.observability import notes
from weir.platform.registry import Registry
from weir.platform.runtime import admission
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
    for event in stored:
        tx.notes.append(
            notes.Note(notes.EVENT_ACCEPTED, event_id=event.id, fields={"name": event.name})
        )
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
