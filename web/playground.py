"""The flow-control playground on a function's page: the events typed (or recorded) in, the
timeline Weir's own gates make of them (runtime/simulate.py), shaped for the template."""

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from weir.platform.functions import EventTrigger
from weir.platform.reads import events
from weir.platform.reads.records import EventPage
from weir.platform.registry import Function
from weir.platform.runtime.simulate import SimEvent, Simulation, simulate
from weir.platform.service import Platform
from weir.web.display import span

EXAMPLE = '0 {"user": "a"}\n500 {"user": "a"}\n1200 {"user": "b"}\n'
RECORDED = 50  # the newest events of the trigger a "load recorded" fills in
MIN_WIDTH = 0.8  # percent: an instant still shows


@dataclass(frozen=True)
class Outcome:
    """What the page shows after a play: the timeline, or what was wrong with the input."""

    error: str = ""
    timeline: dict[str, Any] | None = None


def parse_lines(text: str) -> list[SimEvent]:
    """One event per line, `<ms after zero> <data as a JSON object>`; `#` starts a comment.
    The data may be left out ({}); problems name their line."""
    found: list[SimEvent] = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        at_text, _, rest = stripped.partition(" ")
        if not at_text.isdigit():
            raise ValueError(
                f"line {number}: start with the time in ms after zero, like "
                f'`1500 {{"id": 1}}` (got {at_text!r})'
            )
        try:
            data = json.loads(rest) if rest.strip() else {}
        except ValueError as exc:
            raise ValueError(f"line {number}: the data is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f'line {number}: the data must be a JSON object, like {{"id": 1}}')
        found.append(SimEvent(int(at_text), data))
    if not found:
        raise ValueError('type at least one event: a line like `0 {"id": 1}`')
    return found


async def recorded_lines(weir: Platform, fn: Function) -> str:
    """The newest stored events of the function's first event trigger, as playground lines
    with their real spacing in time."""
    trigger = next((t for t in fn.config.triggers if isinstance(t, EventTrigger)), None)
    if trigger is None:
        return ""
    name = trigger.event
    page = (
        EventPage(limit=RECORDED, name_prefix=name[:-1])
        if name.endswith("*")
        else EventPage(limit=RECORDED, name=name)
    )
    listing = await weir.read(lambda c: events.event_listing(c, page))
    stored = [s.event for s in reversed(listing.events)]  # oldest first
    if not stored:
        return ""
    zero = stored[0].received_at
    lines = []
    for event in stored:
        data = event.payload.get("data")
        text = json.dumps(data if isinstance(data, dict) else {}, ensure_ascii=False)
        lines.append(f"{event.received_at - zero} {text}")
    return "\n".join(lines) + "\n"


async def play(fn: Function, text: str, run_ms_text: str) -> Outcome:
    try:
        sequence = parse_lines(text)
        run_ms = _run_ms(run_ms_text)
        sim = await asyncio.to_thread(simulate, fn, sequence, run_ms)
    except ValueError as exc:  # SimulationError is one
        return Outcome(error=str(exc))
    return Outcome(timeline=timeline(sim))


def _run_ms(text: str) -> int:
    stripped = text.strip() or "0"
    if not stripped.isdigit():
        raise ValueError(f"each run lasts: a whole number of ms (got {text!r})")
    return int(stripped)


def timeline(sim: Simulation) -> dict[str, Any]:
    """Bars placed as percentages of the whole span, as the run page's waterfall does."""
    ends = [e.at_ms for e in sim.events]
    for run in sim.runs:
        ends += [run.queued_ms, run.started_ms or 0, run.ended_ms or 0]
    total = max([*ends, 1])

    def place(start: int, end: int) -> tuple[float, float]:
        left = 100 * start / total
        width = max(MIN_WIDTH, 100 * (end - start) / total)
        return round(min(left, 100 - MIN_WIDTH), 3), round(min(width, 100 - left + MIN_WIDTH), 3)

    return {
        "total": span(total),
        "events": [_event(e, place) for e in sim.events],
        "runs": [_run(r, place) for r in sim.runs],
        "log": [
            {"at": f"{line.at_ms} ms", "kind": line.kind, "text": line.text} for line in sim.log
        ],
        "started": sum(1 for r in sim.runs if r.started_ms is not None),
        "skipped": sum(1 for e in sim.events if not e.runs and _kinds(e) & SKIPS),
        "unfinished": sim.unfinished,
    }


SKIPS = frozenset({"rate_limited", "idempotent", "duplicate_event_id", "singleton_skipped"})


def _kinds(event: Any) -> set[str]:
    return {x.outcome for x in event.effects}


def _event(event: Any, place: Any) -> dict[str, Any]:
    kinds = _kinds(event)
    fate = (
        "started"
        if "started" in kinds or "queued" in kinds
        else ("skipped" if kinds & SKIPS else "merged")
    )
    left, _ = place(event.at_ms, event.at_ms)
    return {
        "index": event.index,
        "at": f"{event.at_ms} ms",
        "fate": fate,
        "left": left,
        "words": [x.words for x in event.effects],
    }


def _run(run: Any, place: Any) -> dict[str, Any]:
    start = run.started_ms
    delay = place(run.queued_ms, start if start is not None else run.queued_ms)
    busy = (
        place(start, run.ended_ms if run.ended_ms is not None else start)
        if start is not None
        else None
    )
    events_text = ", ".join(f"#{i}" for i in run.events)
    waited = (start - run.queued_ms) if start is not None else None
    return {
        "id": run.id[-6:],
        "events": events_text,
        "cause": run.cause,
        "status": run.status,
        "queued": f"{run.queued_ms} ms",
        "started": f"{start} ms" if start is not None else "not started",
        "waited": span(waited) if waited else "",
        "why": run.waits[-1] if run.waits else "",
        "delay": delay if waited else None,
        "busy": busy,
    }
