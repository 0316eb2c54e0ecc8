"""`GET /v1/runs` and `GET /v1/events`: the lists newest first, narrowed by a CEL `query`
(docs/operations.md, Querying runs and events). A query page examines a bounded window of
rows and answers with the cursor that searches older ones (`metadata.next`)."""

from typing import Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse
from weir.expressions import Expression, ExpressionError
from weir.platform.api import run_queries, run_reads
from weir.platform.api import schema_docs as docs
from weir.platform.api.deps import platform
from weir.platform.api.v1 import V1_STATUS, event_json, run_json
from weir.platform.foundation.vocabulary import SYSTEM_EVENT_PREFIX
from weir.platform.reads import events, query
from weir.platform.reads.query import MAX_PAGE, QUERY_WINDOW, QueryPage, QueryScan
from weir.platform.reads.records import EventPage, RunPage
from weir.platform.service import Platform

router = APIRouter(prefix="/v1")
_STATUSES = {
    **{str(s): str(s) for s in V1_STATUS},
    **{v.lower(): str(s) for s, v in V1_STATUS.items()},
}


class BadRequest(ValueError):
    """A parameter that is not allowed; the message says which and what is."""


@router.get("/runs", responses=docs.errors(400, 401))
async def list_runs(
    query: str = "",
    function: str = "",
    status: list[str] = Query([]),
    before: str = "",
    limit: int = 50,
    window: int = QUERY_WINDOW,
    weir: Platform = Depends(platform),
) -> JSONResponse:
    """Runs newest first; `query` is CEL over each run (`status`, `function`, `output`,
    `error.message`, `event.data`, ...); `before` the cursor of `metadata.next`."""
    try:
        page = RunPage(
            limit=_limit(limit),
            function_id=_function_id(weir, function),
            statuses=tuple(_status(s) for s in status),
            before=_cursor(before),
        )
        expression = _compiled(run_queries.run_query, query)
        scan = _scan(window)
    except BadRequest as error:
        return JSONResponse({"error": str(error)}, 400)
    except ExpressionError as error:
        return _refused(error)
    if expression is None:
        listing = await run_reads.run_listing(weir, page)
        last = listing.runs[-1] if listing.full else None
        rows = [run_json(weir, r, listing.states[r.id]) for r in listing.runs]
        return _answer(weir, rows, None if last is None else (last.created_at, last.id), None)
    answer = await run_queries.query_runs(weir, page, expression, scan)
    found = answer.page
    rows = [run_json(weir, r, answer.states[r.id]) for r in found.rows]
    return _answer(weir, rows, found.cursor, found)


@router.get("/events", responses=docs.errors(400, 401))
async def list_events(
    query: str = "",
    name: str = "",
    system: bool = False,
    before: str = "",
    limit: int = 50,
    window: int = QUERY_WINDOW,
    weir: Platform = Depends(platform),
) -> JSONResponse:
    """Events newest first; `name` a prefix; Weir's own inngest/... events only with
    `system`; `query` is CEL over `event` (`event.data...`) and `received_at`."""
    prefix = name.strip()
    try:
        page = EventPage(
            limit=_limit(limit),
            name_prefix=prefix or None,
            hide_system=not system and not prefix.startswith(SYSTEM_EVENT_PREFIX),
            before=_cursor(before),
        )
        expression = _compiled(run_queries.event_query, query)
        scan = _scan(window)
    except BadRequest as error:
        return JSONResponse({"error": str(error)}, 400)
    except ExpressionError as error:
        return _refused(error)
    if expression is None:
        listing = await weir.read(lambda c: events.event_listing(c, page))
        last = listing.events[-1].event if listing.full else None
        rows = [event_json(e.event) for e in listing.events]
        return _answer(weir, rows, None if last is None else (last.received_at, last.id), None)
    found = await run_queries.query_events(weir, page, expression, scan)
    return _answer(weir, [event_json(e) for e in found.rows], found.cursor, found)


def _answer(
    weir: Platform,
    rows: list[dict[str, Any]],
    cursor: tuple[int, str] | None,
    found: QueryPage[Any] | None,
) -> JSONResponse:
    meta: dict[str, Any] = {
        "fetched_at": weir.clock.now_ms(),
        "next": None if cursor is None else f"{cursor[0]}.{cursor[1]}",
    }
    if found is not None:
        # how far the query looked: `next` searches on from `back_to` when older rows remain
        meta["searched"] = {
            "examined": found.examined,
            "errors": found.errors,
            "back_to": found.back_to,
            "complete": found.cursor is None,
        }
    return JSONResponse({"data": rows, "metadata": meta})


def _refused(error: ExpressionError) -> JSONResponse:
    return JSONResponse(
        {"error": f"invalid query: {error.problem}", "problems": list(error.problems)}, 400
    )


def _compiled(check: Any, source: str) -> Expression | None:
    return check(source) if source.strip() else None


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise BadRequest(f"limit must be between 1 and {MAX_PAGE}; got {limit}")
    return limit


def _scan(window: int) -> QueryScan:
    if not 1 <= window <= QUERY_WINDOW:
        raise BadRequest(f"window must be between 1 and {QUERY_WINDOW} rows; got {window}")
    return QueryScan(window, query.QUERY_DEADLINE_MS)


def _cursor(text: str) -> tuple[int, str] | None:
    if not text:
        return None
    at, _, ident = text.partition(".")
    if not at.isdigit() or not ident:
        raise BadRequest(f"before must be a cursor from metadata.next, `<ms>.<id>`; got {text!r}")
    return int(at), ident


def _status(text: str) -> str:
    found = _STATUSES.get(text.lower())
    if found is None:
        allowed = ", ".join(V1_STATUS.values())
        raise BadRequest(f"unknown status {text!r}; allowed: {allowed}")
    return found


def _function_id(weir: Platform, slug: str) -> str | None:
    if not slug:
        return None
    fn = weir.registry.by_slug.get(slug)
    if fn is None:
        raise BadRequest(f"no function with slug {slug!r}")
    return fn.id
