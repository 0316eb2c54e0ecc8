"""Loading what each page shows: one read transaction per page, shaped by `display`."""

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection
from weir.platform.functions.describe import describe_function
from weir.platform.service import Platform
from weir.platform.store import catalog, queries
from weir.web import display


@dataclass(frozen=True)
class RunFilter:
    function: str = ""  # a slug
    status: str = ""
    range: str = ""
    before: str = ""


async def run_list(weir: Platform, wanted: RunFilter, limit: int = 50) -> dict[str, Any]:
    now = weir.clock.now_ms()
    page = _run_page(weir, wanted, now, limit)

    def load(conn: Connection) -> tuple[list[Any], dict[str, str]]:
        rows = queries.list_runs(conn, page)
        events = queries.events_by_ids(conn, display.first_event_ids(rows))
        return rows, {e.id: e.name for e in events}

    rows, names = await weir.read(load)
    last = rows[-1] if len(rows) == page.limit else None
    return {
        "runs": [display.run_row(weir, r, display.trigger_of(r, names), now) for r in rows],
        "next": display.cursor(last.created_at, last.id) if last is not None else None,
        "now": now,
    }


def _run_page(weir: Platform, wanted: RunFilter, now: int, limit: int) -> queries.RunPage:
    fn = weir.registry.by_slug.get(wanted.function) if wanted.function else None
    window = display.RANGES.get(wanted.range)
    return queries.RunPage(
        limit=limit,
        # an unknown slug must match nothing, not everything
        function_id=fn.id if fn else (wanted.function or None),
        statuses=(wanted.status,) if wanted.status in display.STATUSES else (),
        since_ms=now - window if window else None,
        before=display.parse_cursor(wanted.before),
    )


async def event_list(weir: Platform, name: str, before: str, limit: int = 30) -> dict[str, Any]:
    page = queries.EventPage(limit=limit, name=name or None, before=display.parse_cursor(before))

    def load(conn: Connection) -> tuple[list[Any], dict[str, list[Any]], dict[str, list[Any]]]:
        rows = queries.list_events(conn, page)
        ids = [r.id for r in rows]
        return rows, queries.runs_of_events(conn, ids), queries.outcomes_of_events(conn, ids)

    rows, runs, outcomes = await weir.read(load)
    last = rows[-1] if len(rows) == page.limit else None
    return {
        "events": [display.event_row(weir, e, runs[e.id], outcomes[e.id]) for e in rows],
        "next": display.cursor(last.received_at, last.id) if last is not None else None,
    }


async def one_event(weir: Platform, event_id: str) -> dict[str, Any] | None:
    def load(conn: Connection) -> Any:
        found = queries.events_by_ids(conn, [event_id])
        if not found:
            return None
        ids = [event_id]
        return found[0], queries.runs_of_events(conn, ids), queries.outcomes_of_events(conn, ids)

    loaded = await weir.read(load)
    if loaded is None:
        return None
    row, runs, outcomes = loaded
    return display.event_row(weir, row, runs[event_id], outcomes[event_id])


async def function_cards(weir: Platform) -> list[dict[str, Any]]:
    now = weir.clock.now_ms()

    def load(conn: Connection) -> tuple[dict[str, int], list[queries.SlotUse], list[catalog.App]]:
        return (
            queries.backlog_by_function(conn),
            queries.slots_in_use(conn, now),
            catalog.list_apps(conn),
        )

    backlog, slots, apps = await weir.read(load)
    app_names = {a.id: a.name for a in apps}
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
            "backlog": backlog.get(fn.id, 0),
            "slots": [s for s in slots if s.function_id == fn.id],
        }
        for fn in fns
    ]


async def app_cards(weir: Platform) -> list[dict[str, Any]]:
    apps = await weir.read(catalog.list_apps)
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
            "error": weir.sync_errors.get(a.url) or a.error,
            "functions": counts.get(a.id, 0),
        }
        for a in apps
    ]
