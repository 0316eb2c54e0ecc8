"""A run's waterfall and the words for why it is waiting, from its history rows.

Every bar is placed as a percentage of the run's whole span (queued -> ended, or now), so the
template only sets `left` and `width`; no layout happens in the browser.
"""

from dataclasses import dataclass
from typing import Any

from weir.platform.reads.records import HistoryEntry, Run
from weir.platform.vocabulary import HistoryKind, RunStatus, StepStatus
from weir.web.display import clock, span

MIN_WIDTH = 0.6  # percent: an instant still shows as a visible tick


@dataclass(frozen=True)
class Bar:
    label: str
    kind: str  # queued, call, sleep, wait, invoke, backoff
    status: str
    start: str
    took: str
    left: float
    width: float
    note: str = ""


def waterfall(
    run: Run, rows: list[HistoryEntry], step_names: dict[str, str], now: int
) -> list[Bar]:
    t0 = run.created_at
    t1 = max([run.ended_at or now, *(_end(r, now) for r in rows)])
    place = _Placer(t0, max(t1 - t0, 1))
    bars = [_queued(run, place, now)]
    for index, row in enumerate(rows):
        bars.append(_bar(row, step_names, place, now))
        backoff = _backoff(row, rows[index + 1 :], run, place)
        if backoff is not None:
            bars.append(backoff)
    return bars


class _Placer:
    def __init__(self, t0: int, total: int) -> None:
        self.t0, self.total = t0, total

    def __call__(self, start: int, end: int) -> tuple[float, float]:
        left = 100 * (start - self.t0) / self.total
        width = max(MIN_WIDTH, 100 * (end - start) / self.total)
        return round(left, 3), round(min(width, 100 - left + MIN_WIDTH), 3)


def _end(row: HistoryEntry, now: int) -> int:
    return row.ended_at if row.ended_at is not None else now


def _queued(run: Run, place: _Placer, now: int) -> Bar:
    began = run.started_at if run.started_at is not None else (run.ended_at or now)
    left, width = place(run.created_at, began)
    status = StepStatus.COMPLETED if run.started_at is not None else run.status
    return Bar(
        "Queued", "queued", status, clock(run.created_at), span(began - run.created_at), left, width
    )


def _bar(row: HistoryEntry, names: dict[str, str], place: _Placer, now: int) -> Bar:
    end = _end(row, now)
    left, width = place(row.started_at, end)
    label, note = _describe(row, names)
    status = (
        row.status
        if row.ended_at is not None or row.kind == HistoryKind.CALL
        else StepStatus.WAITING
    )
    took = span(end - row.started_at) + ("" if row.ended_at is not None else " so far")
    return Bar(label, row.kind, status, clock(row.started_at), took, left, width, note)


def _describe(row: HistoryEntry, names: dict[str, str]) -> tuple[str, str]:
    name = row.name or names.get(row.step_id or "", "") or (row.step_id or "")
    detail = row.detail
    if row.kind == HistoryKind.CALL:
        return _call_label(row, names)
    if row.kind == HistoryKind.SLEEP:
        return f"Sleep · {name}", f"until {clock(detail.until)}"
    if row.kind == HistoryKind.WAIT:
        return f"Wait for event {detail.event} · {name}", f"until {clock(detail.until)}"
    if row.kind == HistoryKind.INVOKE:
        return f"Invoke {detail.function} · {name}", ""
    return f"{row.kind} · {name}", ""


def _call_label(row: HistoryEntry, names: dict[str, str]) -> tuple[str, str]:
    detail = row.detail
    reported = ", ".join(f"{o.op} {o.name or o.id}" for o in detail.ops)
    target = names.get(row.step_id or "", "") if row.step_id != "step" else ""
    label = f"Call{' · ' + target if target else ''} · attempt {row.attempt + 1}"
    if detail.error is not None:
        error = detail.error
        return label, f"error: {error.get('name', 'Error')}: {error.get('message', '')}"
    if detail.returned:
        return label, "function returned"
    return label, reported


def _backoff(row: HistoryEntry, later: list[HistoryEntry], run: Run, place: _Placer) -> Bar | None:
    """The pause between a failed attempt and the next one (or the one still to come)."""
    if row.kind != HistoryKind.CALL or row.status != StepStatus.FAILED or row.ended_at is None:
        return None
    nxt = next((r for r in later if r.kind == HistoryKind.CALL and r.step_id == row.step_id), None)
    if nxt is not None and nxt.attempt == row.attempt + 1:
        return _backoff_bar(
            row.ended_at, nxt.started_at, row.attempt + 2, place, StepStatus.COMPLETED
        )
    waiting = run.waiting or {}
    if nxt is None and waiting.get("gate") == "retry" and waiting.get("until_ms"):
        return _backoff_bar(
            row.ended_at, int(waiting["until_ms"]), row.attempt + 2, place, StepStatus.WAITING
        )
    return None


def _backoff_bar(start: int, end: int, attempt: int, place: _Placer, status: str) -> Bar:
    left, width = place(start, max(end, start))
    label = f"Retry backoff before attempt {attempt}"
    return Bar(label, "backoff", status, clock(start), span(max(end - start, 0)), left, width)


def waiting_reasons(run: Run, rows: list[HistoryEntry], now: int) -> list[str]:
    """Why the run is not moving, most specific first; empty for a moving or ended run."""
    if run.ended:
        return []
    reasons: list[str] = []
    waiting = run.waiting
    if isinstance(waiting, dict) and waiting.get("words"):
        reasons.append(str(waiting["words"]) + _left(waiting.get("until_ms"), now))
    for row in rows:
        if row.ended_at is None and row.kind in (
            HistoryKind.SLEEP,
            HistoryKind.WAIT,
            HistoryKind.INVOKE,
        ):
            reasons.append(_open_words(row, now))
    if not reasons and run.status == RunStatus.QUEUED:
        reasons.append("queued: waiting for a worker to pick it up")
    return reasons


def _open_words(row: HistoryEntry, now: int) -> str:
    name = row.name or row.step_id
    detail = row.detail
    if row.kind == HistoryKind.SLEEP:
        return f"sleeping until {clock(detail.until)} (step {name}){_left(detail.until, now)}"
    if row.kind == HistoryKind.WAIT:
        condition = f" where {detail.expression}" if detail.expression else ""
        until = clock(detail.until)
        text = f"waiting for event {detail.event}{condition} until {until} (step {name})"
        return text + _left(detail.until, now)
    return f"waiting for the invoked function {detail.function} (step {name})"


def _left(until: Any, now: int) -> str:
    if not isinstance(until, int) or until <= now:
        return ""
    return f" — {span(until - now)} from now"
