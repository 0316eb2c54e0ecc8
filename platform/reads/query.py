"""CEL queries over runs and events, paged newest first with a bounded scan per page.

No index can answer an arbitrary CEL condition, so a page walks the (created_at) index of runs
(the (received_at) index of events) newest first from its cursor, narrowed by the list's own
filters (function, status, time range, event name), and evaluates the query on each row. A
page stops at `limit` matches, after `window` rows examined, or once `deadline_ms` has passed
(checked after each row, so one costly evaluation is the most it overruns by: each runs under
the CEL budget, 200 ms by default), whichever comes first, and says how far
back it looked; its cursor continues from the last row examined ("search older"). So no page
costs more than a bounded scan, however many rows are stored or how few match.

A row on which the query fails (a missing field, a type mismatch, a result that is not a
boolean, an exceeded evaluation budget) does not match; the page counts such rows in `errors`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection
from weir.expressions import EvaluationError, Expression, required_comparisons
from weir.platform.foundation.record_type import record
from weir.platform.reads.query_fields import (
    FunctionNames,
    event_variables,
    plain_string,
    run_variables,
)
from weir.platform.store.records.events import StoredEvent
from weir.platform.store.records.runs import Run
from weir.platform.store.views import queries
from weir.platform.store.views.queries import EventPage, RunPage, ScannedRun

# Rows one page examines at most: about half a second of evaluation on one core (see
# bench/RESULTS.md, CEL queries). Each REST or UI request may ask for fewer, never more.
QUERY_WINDOW = 5_000
MAX_PAGE = queries.MAX_PAGE  # matches one page holds at most
QUERY_DEADLINE_MS = 700  # a page stops examining once this has passed (costly expressions)

T = TypeVar("T")


@record
class QueryScan:
    """How much one page may examine."""

    window: int
    deadline_ms: int


def default_scan() -> QueryScan:
    """The bounds a page has unless it asks for a smaller window (read at each call)."""
    return QueryScan(QUERY_WINDOW, QUERY_DEADLINE_MS)


@record
class QueryPage(Generic[T]):
    """One page of a query: its matches, newest first, and where it stopped looking."""

    rows: list[T]
    examined: int  # rows the query was evaluated on
    errors: int  # of those, rows on which it failed (counted as not matching)
    # (time, id) of the last row examined when older rows may remain: the cursor that goes
    # on searching from there; None once every row older than the page's cursor was examined
    cursor: tuple[int, str] | None
    back_to: int | None  # the time of the oldest row examined (None: none was)


def query_runs(
    conn: Connection,
    page: RunPage,
    expression: Expression,
    names: Mapping[str, FunctionNames],
    scan: QueryScan | None = None,
) -> QueryPage[Run]:
    """The runs matching `page`'s filters and `expression`, newest first from its cursor.
    Only what the query reads is decoded: the output, the trigger's payload, the attempts."""
    narrowed = narrowed_page(page, expression, names)
    if narrowed is None:  # the query asks for a status or function the filters leave out
        return QueryPage([], 0, 0, None, None)
    page = narrowed
    read = {path[0] for path in expression.paths}
    wants_output = bool(read & {"output", "error"})

    def variables(chunk: Sequence[ScannedRun]) -> list[dict[str, Any]]:
        triggers = [_trigger(r) for r in chunk] if "event" in read else []
        payloads = queries.event_payload_texts(conn, [t for t in triggers if t])
        tries = queries.run_attempts(conn, [r.id for r in chunk]) if "attempt" in read else {}
        found = []
        for i, r in enumerate(chunk):
            output = _decoded(r.output) if wants_output else None
            event = _decoded(payloads.get(triggers[i] or "")) if triggers else None
            found.append(run_variables(r, names, output, event, tries.get(r.id, 0)))
        return found

    found = _scan(
        lambda cursor, count: queries.scan_runs(
            conn, replace(page, before=cursor), count, output=wants_output
        ),
        lambda r: (r.created_at, r.id),
        variables,
        expression,
        page.before,
        page.limit,
        scan,
    )
    full = queries.runs_by_ids(conn, [r.id for r in found.rows])
    return QueryPage(full, found.examined, found.errors, found.cursor, found.back_to)


def narrowed_page(
    page: RunPage, expression: Expression, names: Mapping[str, FunctionNames]
) -> RunPage | None:
    """The page narrowed by what every match needs, read through the indexes: a top-level
    `status == "…"` walks the (status, created_at) index, a `function_slug` or `function_id`
    the (function_id, created_at) one, so a query for failed runs of one function examines
    only those. None: no run can match (the query and the list's filters disagree). The
    query is still evaluated on each row: this only skips rows it would refuse."""
    by_slug = {n.slug: fn_id for fn_id, n in names.items()}
    for seen in required_comparisons(expression.source):
        value = plain_string(seen.literal) if seen.operator == "==" else None
        if value is None or len(seen.path) != 1:
            continue
        field = seen.path[0]
        if field == "status":
            if page.statuses and value not in page.statuses:
                return None
            page = replace(page, statuses=(value,))
        elif field in ("function_id", "function_slug"):
            fn_id = value if field == "function_id" else by_slug.get(value)
            if fn_id is None:
                continue  # a function no longer registered: its runs show its id as slug
            if page.function_id and page.function_id != fn_id:
                return None
            page = replace(page, function_id=fn_id)
    return page


def trigger_names(conn: Connection, found: Sequence[Run]) -> dict[str, str]:
    """Trigger event id -> its name, for the runs a page shows."""
    triggers = [r.trigger_id for r in found if r.trigger_id is not None]
    return {e.id: e.name for e in queries.events_by_ids(conn, triggers)}


def _trigger(run: ScannedRun) -> str | None:
    ids = queries.json_value(run.event_ids)
    return str(ids[0]) if isinstance(ids, list) and ids else None


def _decoded(text: str | None) -> Any:
    return None if text is None else queries.json_value(text)


def query_events(
    conn: Connection, page: EventPage, expression: Expression, scan: QueryScan | None = None
) -> QueryPage[StoredEvent]:
    """The events matching `page`'s filters and `expression`, newest first from its cursor.
    A top-level `event.name == "…"` walks the (name, received_at) index."""
    for seen in required_comparisons(expression.source):
        value = plain_string(seen.literal) if seen.operator == "==" else None
        if value is None or seen.path != ("event", "name"):
            continue
        if (page.name and page.name != value) or not value.startswith(page.name_prefix or ""):
            return QueryPage([], 0, 0, None, None)  # the list's filters leave it out
        page = replace(page, name=value)
    return _scan(
        lambda cursor, count: queries.scan_events(conn, replace(page, before=cursor), count),
        lambda e: (e.received_at, e.id),
        lambda chunk: [event_variables(e) for e in chunk],
        expression,
        page.before,
        page.limit,
        scan,
    )


def _reads(expression: Expression, name: str) -> bool:
    return any(path[0] == name for path in expression.paths)


def _scan(
    fetch: Callable[[tuple[int, str] | None, int], list[T]],
    key: Callable[[T], tuple[int, str]],
    variables: Callable[[Sequence[T]], list[dict[str, Any]]],
    expression: Expression,
    cursor: tuple[int, str] | None,
    limit: int,
    scan: QueryScan | None,
) -> QueryPage[T]:
    scan = scan or default_scan()
    limit = max(1, min(limit, MAX_PAGE))
    window = max(1, scan.window)
    stop_at = time.monotonic() + scan.deadline_ms / 1000
    matches: list[T] = []
    examined = errors = 0
    back_to: int | None = None
    while True:
        asked = min(queries.MAX_SCAN, window - examined)
        chunk = fetch(cursor, asked)
        for n, (row, activation) in enumerate(zip(chunk, variables(chunk), strict=True)):
            examined += 1
            cursor, back_to = key(row), key(row)[0]
            verdict = _verdict(expression, activation)
            errors += verdict is None
            if verdict:
                matches.append(row)
            last = n == len(chunk) - 1 and len(chunk) < asked  # no older row is left
            # Checked after every row: one costly evaluation may take its whole budget.
            if not last and (len(matches) == limit or time.monotonic() >= stop_at):
                return QueryPage(matches, examined, errors, cursor, back_to)
        if len(chunk) < asked:  # every older row was examined
            return QueryPage(matches, examined, errors, None, back_to)
        if examined >= window:
            return QueryPage(matches, examined, errors, cursor, back_to)


def _verdict(expression: Expression, activation: dict[str, Any]) -> bool | None:
    """Whether the row matches; None when the query failed on it (it does not match)."""
    try:
        result = expression.evaluate(activation)
    except EvaluationError:  # an exceeded budget too: that row's data is to blame
        return None
    return result if isinstance(result, bool) else None
