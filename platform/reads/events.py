"""Events: one event with its runs and outcomes, and a page of events as the list shows them."""

from dataclasses import dataclass

from sqlalchemy import Connection
from weir.platform.store import event_records, queries, run_records
from weir.platform.store.event_records import Outcome, StoredEvent
from weir.platform.store.queries import EventPage, EventRun
from weir.platform.store.run_records import Run


def event(conn: Connection, event_id: str) -> StoredEvent | None:
    return event_records.get_event(conn, event_id)


def event_runs(conn: Connection, event_id: str) -> list[Run]:
    """The runs an event is part of (started, or batched into), by run id."""
    return run_records.runs_for_event(conn, event_id)


@dataclass(frozen=True)
class EventDetail:
    """An event, the runs it is part of, and why functions started no run of their own from
    it: what `GET /v1/events/{id}` and GraphQL `event` show."""

    event: StoredEvent
    runs: list[Run]
    outcomes: list[Outcome]


def event_detail(conn: Connection, event_id: str) -> EventDetail | None:
    found = event_records.get_event(conn, event_id)
    if found is None:
        return None
    return EventDetail(
        found,
        run_records.runs_for_event(conn, event_id),
        event_records.outcomes_for_event(conn, event_id),
    )


@dataclass(frozen=True)
class EventSummary:
    """An event as the events list and the event page show it: its runs in brief."""

    event: StoredEvent
    runs: list[EventRun]
    outcomes: list[Outcome]


@dataclass(frozen=True)
class EventListing:
    events: list[EventSummary]  # newest first
    full: bool  # the page is full: there may be older events


def event_listing(conn: Connection, page: EventPage) -> EventListing:
    rows = queries.list_events(conn, page)
    return EventListing(_summaries(conn, rows), len(rows) == page.limit)


def event_summary(conn: Connection, event_id: str) -> EventSummary | None:
    found = queries.events_by_ids(conn, [event_id])
    return _summaries(conn, found)[0] if found else None


def _summaries(conn: Connection, rows: list[StoredEvent]) -> list[EventSummary]:
    ids = [r.id for r in rows]
    runs, outcomes = queries.runs_of_events(conn, ids), queries.outcomes_of_events(conn, ids)
    return [EventSummary(r, runs[r.id], outcomes[r.id]) for r in rows]
