"""Rows from the store shaped for display: times as text, durations in words, JSON pretty.

Both the server-rendered pages and the polling JSON endpoints use these, so a row looks the
same whether it came with the page or arrived live.
"""

import json
from datetime import UTC, datetime
from typing import Any

from weir.platform.foundation.vocabulary import (
    SYSTEM_EVENT_PREFIX,
    EventEffect,
    EventOutcome,
    RunStatus,
)
from weir.platform.reads.events import EventSummary
from weir.platform.reads.records import EventRun, Outcome, Run
from weir.platform.reads.run_state import RunState
from weir.platform.service import Platform

STATUSES = tuple(RunStatus)  # the runs page's filter, in lifecycle order
RANGES = {"15m": 15 * 60_000, "1h": 3_600_000, "24h": 86_400_000, "7d": 7 * 86_400_000}
RANGE_LABELS = {
    "": "Any time",
    "15m": "Last 15 minutes",
    "1h": "Last hour",
    "24h": "Last 24 hours",
    "7d": "Last 7 days",
}


def clock(ms: int | None) -> str:
    if ms is None:
        return ""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{ms % 1000:03d} UTC"


def iso(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


def span(ms: int | None) -> str:
    """A duration for people: "850 ms", "3.2 s", "4 min 10 s", "2 h 5 min"."""
    if ms is None:
        return ""
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(ms // 1000, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def pretty_value(value: Any) -> str:
    """A decoded JSON value, indented."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def cursor(at: int, ident: str) -> str:
    return f"{at}.{ident}"


def parse_cursor(text: str | None) -> tuple[int, str] | None:
    if not text:
        return None
    at, _, ident = text.partition(".")
    if not at.isdigit() or not ident:
        return None
    return int(at), ident


def function_label(weir: Platform, function_id: str) -> tuple[str, str]:
    """(display name, slug) of a function, even one removed from its app."""
    fn = weir.registry.by_id.get(function_id)
    if fn is None:
        return function_id, function_id
    return fn.config.name or fn.slug, fn.slug


def ago(ms: int | None, now: int) -> str:
    """A moment relative to now: "just now", "12 s ago", "3 min ago", "in 5 min"."""
    if ms is None:
        return ""
    delta = now - ms
    if abs(delta) < 1000:
        return "just now"
    words = span_rounded(abs(delta))
    return f"{words} ago" if delta > 0 else f"in {words}"


def span_rounded(ms: int) -> str:
    for unit_ms, unit in ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1000, "s")):
        if ms >= unit_ms:
            return f"{ms // unit_ms} {unit}"
    return f"{ms} ms"


def why_waiting(state: RunState | None) -> str:
    """The runs list's "why waiting" cell: the run state's words while it waits (the same
    words the run page, REST and GraphQL give)."""
    return state.words if state is not None and state.waiting else ""


def list_row(
    weir: Platform,
    run: Run,
    trigger: str,
    now: int,
    apps: dict[str, str],
    state: RunState | None = None,
) -> dict[str, Any]:
    """A run as the runs list shows it: the run page's fields, its app, why it waits, and
    relative times (the absolute ones stay for the hover)."""
    fn = weir.registry.by_id.get(run.function_id)
    return run_row(weir, run, trigger, now, state) | {
        "app": apps.get(fn.app_id, "") if fn is not None else "",
        "why": why_waiting(state),
        "queued_ms": run.created_at,
        "queued_iso": iso(run.created_at),
        "queued_ago": ago(run.created_at, now),
        "started_ms": run.started_at,
        "started_iso": iso(run.started_at),
        "started_ago": ago(run.started_at, now),
    }


def run_row(
    weir: Platform, run: Run, trigger: str, now: int, state: RunState | None = None
) -> dict[str, Any]:
    """`state` (reads/run_state.py) gives the "why waiting" words, as the run page says them."""
    name, slug = function_label(weir, run.function_id)
    began = run.started_at
    finished = run.ended_at if run.ended_at is not None else (now if began else None)
    return {
        "id": run.id,
        "status": run.status,
        "function": name,
        "function_slug": slug,
        "trigger": trigger,
        "queued_at": clock(run.created_at),
        "started_at": clock(began),
        "ended_at": clock(run.ended_at),
        "duration": span(finished - began) if began is not None and finished is not None else "",
        "waiting": state.words if state is not None and state.waiting else None,
        "state": state.kind if state is not None else None,
        "rerun_of": run.original_run_id,
    }


def trigger_of(run: Run, names: dict[str, str]) -> str:
    if run.cron:
        return f"cron {run.cron}"
    ids = run.event_ids
    if not ids:
        return ""
    first = names.get(ids[0], "")
    return f"{first} (+{len(ids) - 1} more)" if len(ids) > 1 else first


OUTCOME_WORDS = {
    EventOutcome.RATE_LIMITED: "rate limited",
    EventOutcome.IDEMPOTENT: "skipped: idempotent duplicate",
    EventOutcome.DUPLICATE_EVENT_ID: "skipped: an event with this id already started a run",
    EventOutcome.DEBOUNCED: "debounced (the run starts after the last event)",
    EventOutcome.BATCHED: "added to a batch",
    EventOutcome.SINGLETON_SKIPPED: "skipped: a singleton run is active",
    EventOutcome.RESUMED: "resumed a run waiting for it",
    EventOutcome.CANCELLED_RUN: "cancelled a run",
    EventOutcome.SUPERSEDED: "superseded by a later event (debounce)",
    EventOutcome.FUNCTION_PAUSED: "skipped: the function is paused",
    "throttled": "throttled",
}


# (label, tone) of each effect an event may have; tone picks the badge colour (app.css).
EFFECT_LABELS: dict[str, tuple[str, str]] = {
    EventEffect.STARTED: ("Started run", "running"),
    EventEffect.BATCHED_INTO: ("Batched into run", "running"),
    EventOutcome.RESUMED: ("Resumed a waiting run", "completed"),
    EventOutcome.CANCELLED_RUN: ("Cancelled a run", "cancelled"),
    EventOutcome.SUPERSEDED: ("Superseded (debounce)", "skipped"),
    EventOutcome.DEBOUNCED: ("Debounced", "queued"),
    EventOutcome.BATCHED: ("Waiting in a batch", "queued"),
    EventOutcome.RATE_LIMITED: ("Skipped by the rate limit", "skipped"),
    EventOutcome.IDEMPOTENT: ("Skipped by idempotency", "skipped"),
    EventOutcome.DUPLICATE_EVENT_ID: ("Skipped: event id seen before", "skipped"),
    EventOutcome.SINGLETON_SKIPPED: ("Skipped by singleton", "skipped"),
    EventOutcome.EXPRESSION_OVER_BUDGET: ("Refused: expression over budget", "failed"),
    EventOutcome.FUNCTION_PAUSED: ("Skipped: function paused", "skipped"),
}


def effect_label(kind: str) -> tuple[str, str]:
    """A known effect's label, or a readable one made of a newer gate's own word."""
    return EFFECT_LABELS.get(kind, (kind.replace("_", " ").capitalize(), "skipped"))


def event_row(weir: Platform, summary: EventSummary) -> dict[str, Any]:
    event = summary.event
    payload = event.payload
    return {
        "id": event.id,
        "name": event.name,
        "received_at": clock(event.received_at),
        "payload": json.dumps(payload, indent=2, ensure_ascii=False),
        "replayable": not event.name.startswith(SYSTEM_EVENT_PREFIX),
        "runs": [_event_run(weir, r) for r in summary.runs],
        "outcomes": [_outcome(weir, o) for o in summary.outcomes],
    }


def _event_run(weir: Platform, run: EventRun) -> dict[str, Any]:
    name, _ = function_label(weir, run.function_id)
    return {"id": run.id, "status": run.status, "function": name}


def _outcome(weir: Platform, row: Outcome) -> dict[str, Any]:
    name, _ = function_label(weir, row.function_id)
    words = OUTCOME_WORDS.get(row.outcome, row.outcome.replace("_", " "))
    label, tone = effect_label(row.outcome)
    return {
        "function": name,
        "words": words,
        "detail": row.detail,
        "run_id": row.run_id,
        "label": label,
        "tone": tone,
    }
