"""Events: one event with its runs and outcomes, and a page of events as the list shows them."""

from collections.abc import Mapping

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import EventEffect, EventOutcome
from weir.platform.reads.run_state import RunState, run_states
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records.events import Outcome, StoredEvent
from weir.platform.store.records.runs import Run
from weir.platform.store.views import handed, queries, run_facts
from weir.platform.store.views.queries import EventPage, EventRun
from weir.platform.store.views.run_facts import RunLink


def event(conn: Connection, event_id: str) -> StoredEvent | None:
    return event_records.get_event(conn, event_id)


def event_runs(conn: Connection, event_id: str) -> list[Run]:
    """The runs an event is part of (started, or batched into), by run id."""
    return handed.current(conn, run_records.runs_for_event(conn, event_id))


def event_runs_with_states(
    conn: Connection, event_id: str, now: int, max_attempts: Mapping[str, int]
) -> tuple[list[Run], dict[str, RunState]]:
    """The event's runs and each one's state (one read)."""
    found = event_runs(conn, event_id)
    return found, run_states(conn, found, now, max_attempts)


@record
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
        event_runs(conn, event_id),
        event_records.outcomes_for_event(conn, event_id),
    )


@record
class EventSummary:
    """An event as the events list and the event page show it: its runs in brief."""

    event: StoredEvent
    runs: list[EventRun]
    outcomes: list[Outcome]


@record
class EventListing:
    events: list[EventSummary]  # newest first
    full: bool  # the page is full: there may be older events


def event_listing(conn: Connection, page: EventPage) -> EventListing:
    rows = queries.list_events(conn, page)
    return EventListing(_summaries(conn, rows), len(rows) == page.limit)


def event_summary(conn: Connection, event_id: str) -> EventSummary | None:
    found = queries.events_by_ids(conn, [event_id])
    return _summaries(conn, found)[0] if found else None


def event_summaries(conn: Connection, rows: list[StoredEvent]) -> list[EventSummary]:
    """The events as the list shows them (a query's matches)."""
    return _summaries(conn, rows)


def _summaries(conn: Connection, rows: list[StoredEvent]) -> list[EventSummary]:
    ids = [r.id for r in rows]
    runs, outcomes = queries.runs_of_events(conn, ids), queries.outcomes_of_events(conn, ids)
    return [EventSummary(r, runs[r.id], _current(outcomes[r.id], runs[r.id])) for r in rows]


def _current(outcomes: list[Outcome], runs: list[EventRun]) -> list[Outcome]:
    """The outcomes still true: "waiting in a batch" ends once the batch's run has started
    (the event then belongs to that run, listed with the event's runs)."""
    joined = {r.function_id for r in runs}
    return [o for o in outcomes if o.outcome != EventOutcome.BATCHED or o.function_id not in joined]


@record(slots=True)
class Effect:
    """One thing an event did for one function: started or joined a run, resumed or
    cancelled one, or was skipped, merged or superseded by a rule (`words` says which)."""

    kind: EventEffect | EventOutcome | str  # str: an outcome word of a newer gate
    function_id: str
    run: RunLink | None
    words: str
    at: int


@record
class EventEffects:
    """An event and every effect it had, in the order they happened: the event page."""

    event: StoredEvent
    effects: list[Effect]


def event_effects(conn: Connection, event_id: str) -> EventEffects | None:
    found = event_records.get_event(conn, event_id)
    if found is None:
        return None
    joined = event_runs(conn, event_id)
    outcomes = event_records.outcomes_for_event(conn, event_id)
    linked = run_facts.run_links(conn, [o.run_id for o in outcomes if o.run_id])
    effects = [_run_effect(event_id, r) for r in joined]
    batched = {r.function_id for r in joined if r.batch_id is not None}
    for o in outcomes:
        if o.outcome == EventOutcome.BATCHED and o.function_id in batched:
            continue  # its batch run is listed already
        kind: EventEffect | EventOutcome | str = (
            EventOutcome(o.outcome) if o.outcome in _OUTCOMES else o.outcome
        )
        link = linked.get(o.run_id) if o.run_id else None
        effects.append(Effect(kind, o.function_id, link, o.detail, o.at))
    effects.sort(key=lambda e: e.at)
    return EventEffects(found, effects)


_OUTCOMES = {str(o) for o in EventOutcome}


def _run_effect(event_id: str, run: Run) -> Effect:
    link = RunLink(run.id, run.function_id, run.status)
    if run.batch_id is None and run.trigger_id == event_id:
        words = f"a rerun of run {run.original_run_id}" if run.original_run_id else ""
        return Effect(EventEffect.STARTED, run.function_id, link, words, run.created_at)
    others = len(run.event_ids) - 1
    words = f"one of {others + 1} events of batch {run.batch_id or ''}".rstrip()
    return Effect(EventEffect.BATCHED_INTO, run.function_id, link, words, run.created_at)
