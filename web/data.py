"""Loading what each page shows: one read model per page (`weir.platform.reads`, one read
transaction), shaped by `display`."""

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from weir.expressions import ExpressionError
from weir.platform.api import run_queries, run_reads
from weir.platform.connect import binding
from weir.platform.foundation.vocabulary import SYSTEM_EVENT_PREFIX, CapacityKind
from weir.platform.functions import CronTrigger, is_connect_url
from weir.platform.functions.describe import describe_function, describe_trigger
from weir.platform.reads import bulk, events, load, scopes
from weir.platform.reads.pauses import pause_view
from weir.platform.reads.records import App, Capacity, EventPage, RunPage
from weir.platform.registry import Function, StoredPause
from weir.platform.runtime.capacity import rates as rate_capacities
from weir.platform.runtime.scopes import of_function
from weir.platform.service import Platform
from weir.web import display


@dataclass(frozen=True)
class RunFilter:
    function: str = ""  # a slug
    statuses: tuple[str, ...] = ()
    range: str = ""
    before: str = ""
    search: str = ""  # a run id, an event id, or text in the output
    cel: str = ""  # a CEL query over each run (`weir.platform.reads.query_fields`)

    @property
    def narrowed(self) -> bool:
        """Narrowed by the filters a bulk cancel applies (never by a CEL query)."""
        return bool(self.function or self.statuses or self.range or self.search.strip())

    def query(self, before: str = "") -> str:
        """The filter as a query string (the cursor only if given)."""
        pairs = [("function", self.function), *(("status", s) for s in self.statuses)]
        pairs += [("range", self.range), ("search", self.search), ("query", self.cel)]
        pairs += [("before", before)]
        return urlencode([(k, v) for k, v in pairs if v])


class BadQuery(ValueError):
    """A CEL query the checker refused; the message says what is wrong."""


async def run_list(weir: Platform, wanted: RunFilter, limit: int = 50) -> dict[str, Any]:
    """The runs list; with a CEL query, a bounded scan (raises BadQuery for a bad one)."""
    if not wanted.cel.strip():
        return await _plain_run_list(weir, wanted, limit)
    try:
        expression = run_queries.run_query(wanted.cel)
    except ExpressionError as error:
        raise BadQuery(f"This query is not valid: {error.problem}") from None
    now = weir.clock.now_ms()
    answer = await run_queries.query_runs(weir, _run_page(weir, wanted, now, limit), expression)
    found, states, names = answer.page, answer.states, answer.event_names
    app_names = {a.id: a.name for a in await weir.read(load.apps)}
    rows = [
        display.list_row(weir, r, display.trigger_of(r, names), now, app_names, states.get(r.id))
        for r in found.rows
    ]
    return {
        "runs": rows,
        "next": None,  # a query goes on by `searched.further`, from the last run it examined
        "now": now,
        "searched": _searched(found.cursor, found.examined),
        "errors": found.errors,
    }


async def _plain_run_list(weir: Platform, wanted: RunFilter, limit: int) -> dict[str, Any]:
    now = weir.clock.now_ms()
    page = _run_page(weir, wanted, now, limit)
    listing = await run_reads.run_listing(weir, page)
    apps = await weir.read(load.apps)
    rows, names, states = listing.runs, listing.event_names, listing.states
    app_names = {a.id: a.name for a in apps}
    last = rows[-1] if listing.full else None
    return {
        "runs": [
            display.list_row(
                weir, r, display.trigger_of(r, names), now, app_names, states.get(r.id)
            )
            for r in rows
        ],
        "next": display.cursor(last.created_at, last.id) if last is not None else None,
        "now": now,
        "searched": _searched(listing.search_edge, listing.search_window),
    }


def _searched(edge: tuple[int, str] | None, window: int) -> dict[str, Any] | None:
    """How far a text search looked, when it stopped before the oldest run: it examined runs
    queued back to `back_to_ms`; `further` is the cursor that searches on from there."""
    if edge is None:
        return None
    return {
        "window": window,
        "back_to_ms": edge[0],
        "back_to_iso": display.iso(edge[0]),
        "back_to": display.clock(edge[0]),
        "further": display.cursor(*edge),
    }


def _run_page(weir: Platform, wanted: RunFilter, now: int, limit: int) -> RunPage:
    fn = weir.registry.by_slug.get(wanted.function) if wanted.function else None
    window = display.RANGES.get(wanted.range)
    return RunPage(
        limit=limit,
        # an unknown slug must match nothing, not everything
        function_id=fn.id if fn else (wanted.function or None),
        statuses=tuple(s for s in wanted.statuses if s in display.STATUSES),
        since_ms=now - window if window else None,
        before=display.parse_cursor(wanted.before),
        search=wanted.search.strip() or None,
    )


async def cancellable(weir: Platform, wanted: RunFilter) -> int:
    """How many active runs a bulk cancel with this filter would cancel (the preview)."""
    page = _run_page(weir, wanted, weir.clock.now_ms(), 1)
    return len(await weir.read(lambda c: bulk.active_run_ids(c, page)))


async def cancel_matching(weir: Platform, wanted: RunFilter) -> list[str]:
    page = _run_page(weir, wanted, weir.clock.now_ms(), 1)
    ids = await weir.read(lambda c: bulk.active_run_ids(c, page))
    return await weir.cancel_runs(ids, "cancelled in bulk from the runs page")


async def event_list(
    weir: Platform,
    name: str,
    before: str,
    limit: int = 30,
    *,
    system: bool = False,
    cel: str = "",
) -> dict[str, Any]:
    """Events newest first; `name` is a prefix; Weir's own inngest/... events only if
    `system` (or if the prefix asks for them); `cel` a CEL query (raises BadQuery)."""
    prefix = name.strip()
    page = EventPage(
        limit=limit,
        name_prefix=prefix or None,
        hide_system=not system and not prefix.startswith(SYSTEM_EVENT_PREFIX),
        before=display.parse_cursor(before),
    )
    if cel.strip():
        return await _queried_events(weir, page, cel)
    listing = await weir.read(lambda c: events.event_listing(c, page))
    last = listing.events[-1].event if listing.full else None
    return {
        "events": [display.event_row(weir, e) for e in listing.events],
        "next": display.cursor(last.received_at, last.id) if last is not None else None,
    }


async def _queried_events(weir: Platform, page: EventPage, cel: str) -> dict[str, Any]:
    try:
        expression = run_queries.event_query(cel)
    except ExpressionError as error:
        raise BadQuery(f"This query is not valid: {error.problem}") from None
    found = await run_queries.query_events(weir, page, expression)
    summaries = await weir.read(lambda c: events.event_summaries(c, found.rows))
    return {
        "events": [display.event_row(weir, e) for e in summaries],
        "next": None,  # a query goes on by `searched.further`
        "searched": _searched(found.cursor, found.examined),
        "errors": found.errors,
    }


async def function_cards(weir: Platform) -> list[dict[str, Any]]:
    now = weir.clock.now_ms()
    used = await weir.read(lambda c: load.function_load(c, now))
    stored = {c.id: c for c in await weir.read(scopes.capacities)}
    app_names = {a.id: a.name for a in used.apps}
    fns = sorted(
        weir.registry.by_slug.values(), key=lambda f: (app_names.get(f.app_id, ""), f.slug)
    )
    return [
        {
            "slug": fn.slug,
            "name": fn.config.name or fn.slug,
            "app": app_names.get(fn.app_id, fn.app_id),
            "url": fn.url,
            "lines": describe_function(fn.config),
            "triggers": _triggers(fn, weir.registry.paused.get(fn.id)),
            # the options (flow control, cancel-on, timeouts, retries): the lines after them
            "options": describe_function(fn.config)[len(fn.config.triggers) :],
            "backlog": used.backlog.get(fn.id, 0),
            "slots": used.slots_of(fn.id),
            "capacities": _capacities(fn, stored),
            "pause": _pause(weir.registry.paused.get(fn.id)),
        }
        for fn in fns
    ]


def _triggers(fn: Function, paused: StoredPause | None) -> list[str]:
    """Its triggers as read; a paused function's crons say so (their ticks start nothing)."""
    return [
        f"{describe_trigger(t)} (paused)"
        if paused is not None and isinstance(t, CronTrigger)
        else describe_trigger(t)
        for t in fn.config.triggers
    ]


async def pause_audit(weir: Platform, fn: Function) -> list[dict[str, Any]]:
    """Who paused and resumed the function, when and how: newest first."""
    view = await weir.read(lambda c: pause_view(c, fn.id))
    return [
        {
            "at": display.clock(c.at),
            "action": str(c.action),
            "mode": str(c.mode) if c.mode else "",
            "in_progress": str(c.in_progress) if c.in_progress else "",
            "actor": c.actor,
            "runs": c.runs,
        }
        for c in view.changes
    ]


def _pause(paused: StoredPause | None) -> dict[str, Any] | None:
    if paused is None:
        return None
    return {
        "mode": str(paused.mode),
        "in_progress": str(paused.in_progress),
        "since": display.clock(paused.paused_at),
        "by": paused.paused_by,
    }


def search_text(card: dict[str, Any]) -> str:
    """What the functions page's search looks in: names, slug, app and triggers."""
    return " ".join([card["name"], card["slug"], card["app"], *card["triggers"]]).lower()


def _capacities(fn: Function, stored: dict[str, Capacity]) -> list[dict[str, Any]]:
    """The function's limits with their live capacities; drift: this function's code declares
    another value than the one in force."""
    shown = []
    slots, meter = CapacityKind.CONCURRENCY, CapacityKind.METER
    limits = [(slots, d.capacity_id, d.name, d.limit) for d in of_function(fn)]
    limits += [(meter, d.capacity_id, d.name, d.limit) for d in rate_capacities.of_function(fn)]
    for kind, capacity_id, name, limit in limits:
        cap = stored.get(capacity_id)
        shown.append(
            {
                "id": capacity_id,
                "kind": kind,
                "name": cap.name if cap is not None else name,
                "capacity": cap.capacity if cap is not None else limit,
                "declared": limit,
                "revision": cap.revision if cap is not None else None,
                "drift": cap is not None and cap.capacity != limit,
                "updated_by": cap.updated_by if cap is not None else None,
            }
        )
    return shown


async def app_cards(weir: Platform) -> list[dict[str, Any]]:
    apps = await weir.read(load.apps)
    counts: dict[str, int] = {}
    for fn in weir.registry.by_slug.values():
        counts[fn.app_id] = counts.get(fn.app_id, 0) + 1
    return [
        {
            "name": a.name,
            "url": a.url,
            "sdk": a.sdk,
            "framework": a.framework or "",
            "synced_at": display.clock(a.synced_at),
            "error": weir.sync_errors.get(_errors_url(a)) or a.error,
            "functions": counts.get(a.id, 0),
            "workers": weir.gateway.workers_of(a.id) if is_connect_url(a.url) else None,
        }
        for a in apps
    ]


def _errors_url(app: App) -> str:
    """Where the app's sync errors are kept: a Connect app's under its name (all share a URL)."""
    return binding.worker_url(app.name) if is_connect_url(app.url) else app.url


async def unsynced_apps(weir: Platform) -> list[dict[str, Any]]:
    """Every URL named at start (`-u`) or refused a sync that no stored app serves from, with
    its state and last error: an app that never synced is listed too."""
    served = {_errors_url(a) for a in await weir.read(load.apps)}
    named = dict.fromkeys([*weir.settings.app_urls, *weir.sync_errors])
    return [
        {
            "url": url,
            "error": weir.sync_errors.get(url),
            "at_start": url in weir.settings.app_urls,
        }
        for url in named
        if url not in served and (url in weir.sync_errors or url not in weir.synced_urls)
    ]
