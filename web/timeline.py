"""A run's waterfall and the words for why it is waiting, from its history rows.

Every bar is placed as a percentage of the run's whole span (queued -> ended, or now), so the
template only sets `left` and `width`; no layout happens in the browser.
"""

from dataclasses import dataclass

from weir.platform.foundation.vocabulary import RAN_OPS, HistoryKind, RunStateKind, StepStatus
from weir.platform.reads.records import CallOp, HistoryEntry, Run
from weir.platform.reads.run_state import CallInFlight
from weir.platform.reads.runs import Attempt, RunView
from weir.web.display import clock, span

MIN_WIDTH = 0.6  # percent: an instant still shows as a visible tick
WAITED = "WAITED"  # a backoff that is over: a pause, not a step that completed


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


def waterfall(view: RunView, now: int) -> list[Bar]:
    run, rows = view.run, view.history
    names = {st.step_id: st.name for st in view.steps}
    for row in rows:
        names.setdefault(row.step_id or "", row.name)
    t0 = run.created_at
    pending = view.state.until if view.state.kind == RunStateKind.BACKOFF else None
    t1 = max([run.ended_at or now, pending or 0, *(_end(r, now) for r in rows)])
    place = _Placer(t0, max(t1 - t0, 1), pending)
    bars = [_queued(run, place, now)]
    tries = _by_bucket(view)
    for row in rows:
        attempt = view.call_attempt.get(row.id)
        retried = any(a.number > 1 for a in tries.get(row.id, ()))
        bars.append(_bar(row, names, attempt, retried, place, now))
        if attempt is not None:
            backoff = _backoff(row, attempt, tries, place)
            if backoff is not None:
                bars.append(backoff)
    last = view.steps[-1] if view.steps else None  # the step completed most recently
    after = (last.name or last.step_id) if last is not None else ""
    bars += [_in_flight(call, after, place, run, now) for call in view.in_flight]
    return bars


def _by_bucket(view: RunView) -> dict[int, list[Attempt]]:
    """History id -> the attempts of the same step (or of the function itself)."""
    return {a.entry.id: tries for tries in view.attempts.values() for a in tries}


class _Placer:
    def __init__(self, t0: int, total: int, pending_until: int | None) -> None:
        self.t0, self.total = t0, total
        self.pending_until = pending_until  # a backoff in progress ends then

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


def _in_flight(call: CallInFlight, after: str, place: _Placer, run: Run, now: int) -> Bar:
    """A call in the app, not answered yet: named by its step once Weir knows it (a planned
    step, or one retried after its error); else it is finding the function's next step."""
    began = call.started_at if call.started_at is not None else (run.started_at or now)
    left, width = place(began, now)
    note = "in the app"
    if call.step_id:
        label = f"Call · {call.step_name or call.step_id} · attempt {call.attempt}"
    else:
        again = f" · attempt {call.attempt}" if call.attempt > 1 else ""  # as _call_label counts
        label = f"Call · {call.finding}{again}"
        note += f", after step {after}" if after and not call.first else ""
    took = f"{span(now - began)} so far"
    return Bar(label, HistoryKind.CALL, StepStatus.RUNNING, clock(began), took, left, width, note)


def _bar(
    row: HistoryEntry,
    names: dict[str, str],
    attempt: Attempt | None,
    retried: bool,
    place: _Placer,
    now: int,
) -> Bar:
    end = _end(row, now)
    left, width = place(row.started_at, end)
    label, note = _describe(row, names, attempt, retried)
    status = (
        row.status
        if row.ended_at is not None or row.kind == HistoryKind.CALL
        else StepStatus.WAITING
    )
    took = span(end - row.started_at) + ("" if row.ended_at is not None else " so far")
    return Bar(label, row.kind, status, clock(row.started_at), took, left, width, note)


def _describe(
    row: HistoryEntry, names: dict[str, str], attempt: Attempt | None, retried: bool
) -> tuple[str, str]:
    name = row.name or names.get(row.step_id or "", "") or (row.step_id or "")
    detail = row.detail
    if row.kind == HistoryKind.CALL:
        return _call_label(row, names, attempt, retried)
    if row.kind == HistoryKind.SLEEP:
        return f"Sleep · {name}", f"until {clock(detail.until)}"
    if row.kind == HistoryKind.WAIT and detail.signal:
        return f"Wait for signal {detail.signal} · {name}", f"until {clock(detail.until)}"
    if row.kind == HistoryKind.WAIT:
        return f"Wait for event {detail.event} · {name}", f"until {clock(detail.until)}"
    if row.kind == HistoryKind.INVOKE:
        return f"Invoke {detail.function} · {name}", ""
    return f"{row.kind} · {name}", ""


def _call_label(
    row: HistoryEntry, names: dict[str, str], attempt: Attempt | None, retried: bool
) -> tuple[str, str]:
    detail = row.detail
    reported = ", ".join(f"{o.op} {_op_name(o, names)}" for o in detail.ops)
    step = _attempt_step(row, attempt)
    ran = [o for o in detail.ops if o.op in RAN_OPS]
    named = {o.id: o.name for o in ran if o.name}
    target = names.get(step, "") or named.get(step, "") or step
    if len(ran) > 1 and target:  # a checkpointed call: the steps it ran, first to last
        target = f"{_op_name(ran[0], names)} … {target}"
    number = attempt.number if attempt is not None else row.attempt + 1
    error = (attempt.error if attempt is not None else None) or detail.error
    # A call that ran no step of its own is an attempt of the function, counted only when
    # the function itself is tried again: the call that raised a failed step's error once
    # more is no new attempt after that step's last.
    counted = bool(target) or retried
    label = f"Call{' · ' + target if target else ''}" + (f" · attempt {number}" if counted else "")
    if error is not None:
        return label, f"error: {error.get('name', 'Error')}: {error.get('message', '')}"
    if detail.returned:
        steps = f"ran {len(ran)} steps, " if len(ran) > 1 else ""
        return label, f"{steps}function returned"
    return label, reported


def _op_name(op: CallOp, names: dict[str, str]) -> str:
    return op.name or names.get(op.id) or op.id


def _attempt_step(row: HistoryEntry, attempt: Attempt | None) -> str:
    """The step the call ran ("" when it ran none of its own)."""
    if row.step_id and row.step_id != "step":
        return row.step_id
    if row.detail.error is not None:  # failed as a whole: an attempt of the function's own
        return ""
    ran = [o.id for o in row.detail.ops if o.op in RAN_OPS]
    return ran[-1] if ran and attempt is not None else ""


def _backoff(
    row: HistoryEntry, attempt: Attempt, tries: dict[int, list[Attempt]], place: _Placer
) -> Bar | None:
    """The pause between a failed attempt and the next one (or the one still to come)."""
    if row.ended_at is None or (attempt.error is None and row.status != StepStatus.FAILED):
        return None
    same = tries.get(row.id, [])
    later = [a for a in same if a.number == attempt.number + 1]
    if later:
        nxt = later[0].entry.started_at
        return _backoff_bar(row.ended_at, nxt, attempt.number + 1, place, WAITED)
    if same and same[-1] is attempt and place.pending_until is not None:
        until = place.pending_until
        return _backoff_bar(row.ended_at, until, attempt.number + 1, place, StepStatus.WAITING)
    return None


def _backoff_bar(start: int, end: int, attempt: int, place: _Placer, status: str) -> Bar:
    left, width = place(start, max(end, start))
    label = f"Retry backoff before attempt {attempt}"
    return Bar(label, "backoff", status, clock(start), span(max(end - start, 0)), left, width)
