"""Named read operations behind the read models of `weir.platform.reads` (no writes here).

Lists page by keyset — `(created_at, id)` for runs, `(received_at, id)` for events — so that a
page costs an index range scan whatever the table size; OFFSET would read every skipped row.
"""

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, and_, func, null, or_, select
from sqlalchemy.sql.elements import ColumnElement
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import (
    SYSTEM_EVENT_PREFIX,
    HistoryKind,
    QueueKind,
    RunStatus,
)
from weir.platform.store.engine import json_text
from weir.platform.store.engine.schema import (
    event_outcomes,
    event_runs,
    events,
    history,
    queue,
    runs,
    slots,
)
from weir.platform.store.flow import capacity
from weir.platform.store.records.events import (
    Outcome,
    StoredEvent,
    event_from_row,
    outcome_from_row,
)
from weir.platform.store.records.runs import Run, run_from_row
from weir.platform.store.views import handed
from weir.platform.store.views.run_facts import RunLink

MAX_PAGE = 200
# Runs a text search of outputs examines per request, newest first from the page's cursor: a
# substring of the output has no index, so a search reads each run it examines. Bounded, a
# search answers in about the time of a page however many runs are stored; the answer says how
# far back it looked (`search_edge`) and the next request goes on from there.
SEARCH_WINDOW = 20_000


@record
class RunPage:
    """A filter plus a keyset cursor: the page holds runs strictly older than the cursor."""

    limit: int = 50
    function_id: str | None = None
    statuses: tuple[str, ...] = ()
    since_ms: int | None = None
    until_ms: int | None = None
    before: tuple[int, str] | None = None  # (created_at, id) of the last row already shown
    after: tuple[int, str] | None = None  # only rows newer than this (live polling)
    # a run id, an event id (any event of the run), or else text inside the output (read
    # from a window of about SEARCH_WINDOW runs)
    search: str | None = None
    run_ids: tuple[str, ...] = ()  # only these runs (a search that named them by id)
    search_window: int | None = None  # runs a text search examines; None: SEARCH_WINDOW
    output_text: str | None = None  # only runs whose output holds this (a search, no id)


@record
class EventPage:
    limit: int = 50
    name: str | None = None
    name_prefix: str | None = None  # names starting with this
    hide_system: bool = False  # leave out Weir's own inngest/... events
    before: tuple[int, str] | None = None  # (received_at, id)
    after: tuple[int, str] | None = None


# -- runs --------------------------------------------------------------------------------------
def list_runs(conn: Connection, page: RunPage) -> list[Run]:
    page = _within_window(conn, _by_id_if_found(conn, page))
    query = select(runs).where(*_run_filters(page))
    if page.after is not None:  # polling: the oldest new rows first, so none is skipped
        order = (runs.c.created_at.asc(), runs.c.id.asc())
    else:
        order = (runs.c.created_at.desc(), runs.c.id.desc())
    found = conn.execute(query.order_by(*order).limit(_limit(page.limit)))
    rows = handed.current(conn, [run_from_row(r) for r in found])
    return rows[::-1] if page.after is not None else rows


def search_edge(conn: Connection, page: RunPage) -> tuple[int, str] | None:
    """Where a text search of this page stopped looking: the (created_at, id) of the last
    run it examined when older runs matching the other filters remain unexamined (a cursor
    to search on from); None when it examined every run (or is no text search)."""
    page = _by_id_if_found(conn, page)
    start = _window_start(conn, page)
    if start is None:
        return None
    rest = _run_filters(replace(page, output_text=None))
    older = select(runs.c.id).where(*rest, runs.c.created_at < start).limit(1)
    if conn.execute(older).first() is None:
        return None
    last = select(func.min(runs.c.id)).where(*rest, runs.c.created_at == start)
    return start, str(conn.execute(last).scalar_one())


def search_window(page: RunPage) -> int:
    """How many runs a text search of this page examines (about: see `_window_start`)."""
    return max(1, page.search_window or SEARCH_WINDOW)


def _within_window(conn: Connection, page: RunPage) -> RunPage:
    """A text search bounded to the runs of its window (from `_window_start` on)."""
    start = _window_start(conn, page)
    if start is None:
        return page
    return replace(page, since_ms=start if page.since_ms is None else max(page.since_ms, start))


def _window_start(conn: Connection, page: RunPage) -> int | None:
    """For a text search of outputs on a newest-first page: the created_at of the oldest run
    it examines, `search_window` runs down from the cursor among those matching the other
    filters (runs queued in that same millisecond, or in the cursor's, are examined too).
    None: no text search, or fewer runs than that, so it examines them all. Read off the
    (…, created_at) indexes alone; the search then reads the outputs of that range only."""
    if not page.output_text or page.after is not None:
        return None
    # The cursor by its time alone, so the index answers without reading rows: runs left in
    # the cursor's own millisecond are not counted, and are examined over the window.
    conds = _run_filters(replace(page, output_text=None, before=None))
    if page.before is not None:
        conds.append(runs.c.created_at < page.before[0])
    query = (
        select(runs.c.created_at)
        .where(*conds)
        .order_by(runs.c.created_at.desc())
        .offset(search_window(page) - 1)
        .limit(1)
    )
    found = conn.execute(query).scalar()
    return None if found is None else int(found)


def active_run_ids(conn: Connection, page: RunPage, statuses: Sequence[str], cap: int) -> list[str]:
    """Ids of the runs matching `page` in any of `statuses` (statuses of unfinished runs),
    newest first, at most `cap`. Each status is read through the (status, created_at) index:
    unfinished runs are few, while a function may have a million finished ones, which the
    (function, created_at) index would walk one by one. `|| ''` keeps the planner off it."""
    rest = _run_filters(replace(page, statuses=(), function_id=None, before=None, after=None))
    if page.function_id:
        rest.append(runs.c.function_id.concat("") == page.function_id)
    found: list[tuple[int, str]] = []
    # Each status as readers see it (`handed`): a run whose call is in the app is Running.
    parts = [part for status in statuses for part in handed.stored_parts(status)]
    for stored, extra in parts:
        conds = [runs.c.status == stored, *rest, *([] if extra is None else [extra])]
        query = select(runs.c.created_at, runs.c.id).where(*conds)
        order = (runs.c.created_at.desc(), runs.c.id.desc())
        found += [(r.created_at, r.id) for r in conn.execute(query.order_by(*order).limit(cap))]
    return [run_id for _, run_id in sorted(found, reverse=True)[:cap]]


def _run_filters(page: RunPage) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if page.function_id:
        conds.append(runs.c.function_id == page.function_id)
    if page.statuses:  # as readers see them: a run whose call is in the app is Running
        conds.append(handed.status_in(page.statuses))
    if page.since_ms is not None:
        conds.append(runs.c.created_at >= page.since_ms)
    if page.until_ms is not None:
        conds.append(runs.c.created_at < page.until_ms)
    if page.before is not None:
        conds.append(_older(runs.c.created_at, runs.c.id, page.before))
    if page.after is not None:
        conds.append(_newer(runs.c.created_at, runs.c.id, page.after))
    if page.search:
        conds.append(_run_search(page.search.strip()))
    if page.output_text:
        conds.append(runs.c.output.contains(page.output_text, autoescape=True))
    if page.run_ids:
        conds.append(runs.c.id.in_(page.run_ids))
    return conds


def _by_id_if_found(conn: Connection, page: RunPage) -> RunPage:
    """A search for a run or event id, answered by the indexes: the runs it names; when it
    names none, its text is looked for in outputs (a scan of the search's window)."""
    text = (page.search or "").strip()
    if not text:
        return page
    by_event = select(event_runs.c.run_id).where(event_runs.c.event_id == text)
    named = select(runs.c.id).where(or_(runs.c.id == text, runs.c.id.in_(by_event)))
    ids = [row.id for row in conn.execute(named)]
    if ids:
        return replace(page, search=None, run_ids=tuple(ids))
    return replace(page, search=None, output_text=text)


def _run_search(text: str) -> ColumnElement[bool]:
    by_event = select(event_runs.c.run_id).where(event_runs.c.event_id == text)
    return or_(
        runs.c.id == text,
        runs.c.id.in_(by_event),
        runs.c.output.contains(text, autoescape=True),
    )


def _older(at: Any, ident: Any, cursor: tuple[int, str]) -> ColumnElement[bool]:
    # The plain `at <= t` bound lets the planner seek the (…, created_at) index to the cursor;
    # the OR alone would make it walk every newer row first.
    tie = or_(at < cursor[0], and_(at == cursor[0], ident < cursor[1]))
    return and_(at <= cursor[0], tie)


def _newer(at: Any, ident: Any, cursor: tuple[int, str]) -> ColumnElement[bool]:
    tie = or_(at > cursor[0], and_(at == cursor[0], ident > cursor[1]))
    return and_(at >= cursor[0], tie)


def _limit(limit: int) -> int:
    return max(1, min(limit, MAX_PAGE))


# -- events ------------------------------------------------------------------------------------
def events_by_ids(conn: Connection, event_ids: Sequence[str]) -> list[StoredEvent]:
    """Events in the order of `event_ids` (the first is the run's trigger)."""
    if not event_ids:
        return []
    query = select(events).where(events.c.id.in_(list(event_ids)))
    found = {r.id: event_from_row(r) for r in conn.execute(query)}
    return [found[i] for i in event_ids if i in found]


def list_events(conn: Connection, page: EventPage) -> list[StoredEvent]:
    conds = _event_filters(page)
    query = select(events).where(*conds)
    if page.after is not None:
        query = query.order_by(events.c.received_at.asc(), events.c.id.asc())
    else:
        query = query.order_by(events.c.received_at.desc(), events.c.id.desc())
    rows = [event_from_row(r) for r in conn.execute(query.limit(_limit(page.limit)))]
    return rows[::-1] if page.after is not None else rows


def _event_filters(page: EventPage) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if page.name:
        conds.append(events.c.name == page.name)
    if page.name_prefix:
        conds.append(events.c.name.startswith(page.name_prefix, autoescape=True))
    if page.hide_system:
        conds.append(~events.c.name.startswith(SYSTEM_EVENT_PREFIX, autoescape=True))
    if page.before is not None:
        conds.append(_older(events.c.received_at, events.c.id, page.before))
    if page.after is not None:
        conds.append(_newer(events.c.received_at, events.c.id, page.after))
    return conds


EventRun = RunLink  # a run an event is part of: the same brief record as a linked run


def runs_of_events(conn: Connection, event_ids: Sequence[str]) -> dict[str, list[EventRun]]:
    """For each event, the runs it is part of (started, or batched into)."""
    found: dict[str, list[EventRun]] = {e: [] for e in event_ids}
    if not event_ids:
        return found
    query = (
        select(event_runs.c.event_id, runs.c.id, runs.c.status, runs.c.function_id)
        .join(runs, runs.c.id == event_runs.c.run_id)
        .where(event_runs.c.event_id.in_(list(event_ids)))
        .order_by(runs.c.id)
    )
    rows = list(conn.execute(query))
    status = handed.current_statuses(conn, {row.id: row.status for row in rows})
    for row in rows:
        found[row.event_id].append(RunLink(row.id, row.function_id, status[row.id]))
    return found


def outcomes_of_events(conn: Connection, event_ids: Sequence[str]) -> dict[str, list[Outcome]]:
    """For each event, why a function started no run of its own (rate limited, ...)."""
    found: dict[str, list[Outcome]] = {e: [] for e in event_ids}
    if not event_ids:
        return found
    query = select(event_outcomes).where(event_outcomes.c.event_id.in_(list(event_ids)))
    for row in conn.execute(query.order_by(event_outcomes.c.id)):
        found[row.event_id].append(outcome_from_row(row))
    return found


# -- functions ---------------------------------------------------------------------------------
def backlog_by_function(conn: Connection) -> dict[str, int]:
    """Queued calls per function (steps and starts waiting to run, leased ones included)."""
    query = (
        select(queue.c.function_id, func.count())
        .where(queue.c.kind == QueueKind.EXEC, queue.c.function_id.is_not(None))
        .group_by(queue.c.function_id)
    )
    return {str(fn): int(n) for fn, n in conn.execute(query)}


@record
class SlotUse:
    function_id: str
    key: str  # the evaluated key text; "" for the function-wide limit
    limit: int  # the key's live capacity (the declared limit while none is stored)
    in_use: int


def slots_in_use(conn: Connection, now_ms: int) -> list[SlotUse]:
    """Live concurrency slots per key, named through the runs that hold them.

    Only executing items hold slots, so this joins a handful of rows however big the queue.
    """
    query = (
        select(slots.c.key_hash, queue.c.function_id, runs.c["keys"].label("run_keys"))
        .join(queue, queue.c.id == slots.c.item_id)
        .join(runs, runs.c.id == queue.c.run_id)
        .where(slots.c.expires_at > now_ms)
    )
    counts: dict[tuple[str, str], list[Any]] = {}
    for row in conn.execute(query):
        key, limit, cap = _key_of(json.loads(row.run_keys), row.key_hash)
        entry = counts.setdefault((str(row.function_id), row.key_hash), [key, limit, cap, 0])
        entry[3] += 1
    # shown against the live capacity (an operator's raise or cut), not the declared limit
    sizes = capacity.concurrency_sizes(conn, [e[2] for e in counts.values() if e[2]])
    return [
        SlotUse(fn, k, sizes.get(cap, lim), n)
        for (fn, _), (k, lim, cap, n) in sorted(counts.items())
    ]


def _key_of(keys: dict[str, Any], key_hash: str) -> tuple[str, int, str]:
    """The key's text, declared limit and capacity id, as the run's keys name them."""
    for value in keys.values():
        if isinstance(value, dict) and value.get("hash") == key_hash:
            key, limit = str(value.get("key", "")), int(value.get("limit", 0))
            return key, limit, str(value.get("capacity") or "")
    return "", 0, ""


# -- query scans -------------------------------------------------------------------------------
# A CEL query reads each row it examines, so it walks the (created_at) / (received_at) index
# newest first from its cursor in chunks of at most MAX_SCAN rows (`weir.platform.reads.query`).
MAX_SCAN = 1_000


@record(slots=True)
class ScannedRun:
    """The columns of a run a query sees, its JSON left as text (decoded only if read)."""

    id: str
    function_id: str
    status: str  # as readers see it: a QUEUED run whose call is in the app is RUNNING
    event_ids: str  # JSON list, the first the trigger
    created_at: int
    started_at: int | None
    ended_at: int | None
    output: str | None


_SCANNED = (
    runs.c.id,
    runs.c.function_id,
    runs.c.status,
    runs.c.event_ids,
    runs.c.created_at,
    runs.c.started_at,
    runs.c.ended_at,
)


def scan_runs(conn: Connection, page: RunPage, count: int, *, output: bool) -> list[ScannedRun]:
    """Up to `count` runs matching `page`'s filters, strictly older than its cursor, newest
    first (a text search is not applied here); their outputs only if `output`."""
    filters = _run_filters(replace(page, search=None, output_text=None, after=None))
    columns = (*_SCANNED, runs.c.output if output else null().label("output"))
    order = (runs.c.created_at.desc(), runs.c.id.desc())
    query = select(*columns).where(*filters).order_by(*order).limit(max(1, min(count, MAX_SCAN)))
    rows = list(conn.execute(query))
    queued = [r.id for r in rows if r.status == RunStatus.QUEUED]
    since = handed.handed_since(conn, queued) if queued else {}
    return [
        ScannedRun(
            r.id,
            r.function_id,
            RunStatus.RUNNING if r.id in since else r.status,
            r.event_ids,
            int(r.created_at),
            since.get(r.id, r.started_at),
            r.ended_at,
            r.output,
        )
        for r in rows
    ]


def runs_by_ids(conn: Connection, run_ids: Sequence[str]) -> list[Run]:
    """The runs, as readers see them, in the order of `run_ids`."""
    if not run_ids:
        return []
    found = {
        r.id: run_from_row(r) for r in conn.execute(select(runs).where(runs.c.id.in_(run_ids)))
    }
    return handed.current(conn, [found[i] for i in run_ids if i in found])


def event_payload_texts(conn: Connection, event_ids: Sequence[str]) -> dict[str, str]:
    """Event id -> its stored payload, JSON text."""
    if not event_ids:
        return {}
    query = select(events.c.id, events.c.payload).where(events.c.id.in_(list(event_ids)))
    return {str(r.id): str(r.payload) for r in conn.execute(query)}


def scan_events(conn: Connection, page: EventPage, count: int) -> list[StoredEvent]:
    """Up to `count` events matching `page`'s filters, older than its cursor, newest first."""
    wider = replace(page, limit=max(1, min(count, MAX_SCAN)), after=None)
    conds = _event_filters(wider)
    order = (events.c.received_at.desc(), events.c.id.desc())
    query = select(events).where(*conds).order_by(*order).limit(wider.limit)
    return [event_from_row(r) for r in conn.execute(query)]


def run_attempts(conn: Connection, run_ids: Sequence[str]) -> dict[str, int]:
    """Run id -> the highest attempt (0 = the first) any of its calls to the app reached."""
    if not run_ids:
        return {}
    query = (
        select(history.c.run_id, func.max(history.c.attempt))
        .where(history.c.run_id.in_(list(run_ids)), history.c.kind == HistoryKind.CALL)
        .group_by(history.c.run_id)
    )
    return {str(run_id): int(most or 0) for run_id, most in conn.execute(query)}


def json_value(text: str) -> Any:
    """A stored JSON column's value (outputs, payloads), read as the records read them."""
    return json_text.loads(text)
