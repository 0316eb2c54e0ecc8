"""Runs: one run with everything its page shows, a page of runs, what the SDK's run-state API
answers."""

from collections.abc import Mapping
from dataclasses import field, replace
from typing import Any

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import (
    RAN_OPS,
    WRAPPED_MEMO_OPS,
    GateName,
    HistoryKind,
    Opcode,
    StepStatus,
)
from weir.platform.gates import fifo_lane
from weir.platform.gates.decisions import to_json
from weir.platform.reads import scopes
from weir.platform.reads.run_state import (
    CallInFlight,
    RunState,
    calls_in_flight,
    derive,
    load_facts,
    run_states,
)
from weir.platform.registry import Function
from weir.platform.store.flow import fifo_lanes as fifo
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records
from weir.platform.store.records.events import StoredEvent
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import CallOp, HistoryEntry, Step
from weir.platform.store.views import handed, queries, run_facts
from weir.platform.store.views.queries import RunPage
from weir.platform.store.views.run_facts import RunLink

DISCOVERY = "step"


@record(slots=True)
class Attempt:
    """One call that ran a step (or the function itself), numbered per step from 1."""

    number: int
    entry: HistoryEntry
    error: dict[str, Any] | None  # the attempt's error object, stack included when sent


@record
class RunLinks:
    """The runs this one is tied to: the parent that invoked it, the children it invoked
    (by step id), the run it reruns, and its reruns."""

    parent: RunLink | None = None
    parent_step: str | None = None
    parent_step_name: str = ""  # as the parent named that step, "" if it did not
    children: dict[str, RunLink] = field(default_factory=dict)
    original: RunLink | None = None
    reruns: list[RunLink] = field(default_factory=list)


@record
class RunView:
    """A run with its memoized steps (named), its history (entries still open when the run
    ended shown as cancelled at its end), its calls in the app now (their answers are not in
    the history yet), its events (trigger first), its state, every attempt of each step and
    the runs it is linked to: what the run page, `GET /v1/runs/{id}` and GraphQL `run` show."""

    run: Run
    steps: list[Step]
    history: list[HistoryEntry]
    events: list[StoredEvent]
    state: RunState
    step_status: dict[str, StepStatus] = field(default_factory=dict)
    attempts: dict[str, list[Attempt]] = field(default_factory=dict)  # step id ("" = function)
    call_attempt: dict[int, Attempt] = field(default_factory=dict)  # history id -> attempt
    links: RunLinks = field(default_factory=RunLinks)
    in_flight: list[CallInFlight] = field(default_factory=list)

    @property
    def progress(self) -> str:
        """Changes whenever the run page would show something new."""
        calls = f"{len(self.history)}+{len(self.in_flight)}"  # answered + in the app
        return f"{self.run.status}/{calls}/{len(self.steps)}/{self.state.kind}"


def run_view(
    conn: Connection, run_id: str, now: int, max_attempts: Mapping[str, int]
) -> RunView | None:
    run = _current(conn, run_records.get_run(conn, run_id))
    if run is None:
        return None
    if run.waiting is None:  # a run held by a scope says which scope and how full it is
        waiting = scopes.scope_wait(conn, run, now)
        run = replace(run, waiting=waiting) if waiting is not None else run
    rows = _closed_at_end(run, step_records.list_history(conn, run_id))
    names = _step_names(rows)
    steps = [
        s if s.name else replace(s, name=names.get(s.step_id, ""))
        for s in step_records.list_steps(conn, run_id)
    ]
    attempts = _attempts(rows)
    facts = load_facts(conn, [run], now)  # the state and the calls in flight share it
    return RunView(
        run,
        steps,
        rows,
        queries.events_by_ids(conn, run.event_ids),
        derive(run, facts, now, max_attempts.get(run.function_id)),
        {s.step_id: _step_status(s, rows) for s in steps},
        attempts,
        {a.entry.id: a for tries in attempts.values() for a in tries},
        _links(conn, run, rows),
        calls_in_flight(run, facts, now),
    )


def _closed_at_end(run: Run, rows: list[HistoryEntry]) -> list[HistoryEntry]:
    """A sleep, wait or invoke still open when its run ended ended with it (cancelled)."""
    if run.ended_at is None:
        return rows
    return [
        replace(r, ended_at=max(run.ended_at, r.started_at), status=StepStatus.CANCELLED)
        if r.ended_at is None
        else r
        for r in rows
    ]


def _step_status(step: Step, rows: list[HistoryEntry]) -> StepStatus:
    """How the step ended: a wait that timed out, an invoke or a step that failed."""
    for r in reversed(rows):
        if r.step_id == step.step_id and r.kind in _OPEN_KINDS and r.ended_at is not None:
            return r.status
    memo = step.memo
    if step.op in WRAPPED_MEMO_OPS and isinstance(memo, dict) and "error" in memo:
        return StepStatus.FAILED
    if step.op in (Opcode.WAIT_FOR_EVENT, Opcode.WAIT_FOR_SIGNAL) and memo is None:
        return StepStatus.TIMED_OUT
    return StepStatus.COMPLETED


_OPEN_KINDS = (HistoryKind.SLEEP, HistoryKind.WAIT, HistoryKind.INVOKE)


def _attempts(rows: list[HistoryEntry]) -> dict[str, list[Attempt]]:
    """Each call that ran a step, numbered per step in the order made: a call addressed to
    the step, or a call that ran it inline (its answer reported the step's result or error;
    a call that ran several, checkpointed, counts for the last, where it stopped). A call
    that ran no step (it returned, or only found steps) or failed as a whole counts for the
    function itself, under ""."""
    found: dict[str, list[Attempt]] = {}
    for row in rows:
        if row.kind != HistoryKind.CALL:
            continue
        ran = [o for o in row.detail.ops if o.op in RAN_OPS]
        if row.step_id and row.step_id != DISCOVERY:
            step, error = row.step_id, _op_error(ran, row.step_id) or row.detail.error
        elif ran and row.detail.error is None:
            step, error = ran[-1].id, ran[-1].error
        else:  # the function's own call: numbered as the queue retried it
            tries = found.setdefault("", [])
            tries.append(Attempt(row.attempt + 1, row, row.detail.error))
            continue
        tries = found.setdefault(step, [])
        tries.append(Attempt(len(tries) + 1, row, error))
    return found


def _op_error(ops: list[CallOp], step_id: str) -> dict[str, Any] | None:
    return next((o.error for o in ops if o.id == step_id and o.error), None)


def _links(conn: Connection, run: Run, rows: list[HistoryEntry]) -> RunLinks:
    invoked = {
        f"{run.id}.{r.step_id}": r.step_id
        for r in rows
        if r.kind == HistoryKind.INVOKE and r.step_id
    }
    children = run_facts.runs_by_correlation(conn, list(invoked))
    parent_id, _, parent_step = (run.correlation_id or "").partition(".")
    others = run_facts.run_links(conn, [i for i in (parent_id, run.original_run_id) if i])
    step_name = run_facts.invoke_step_name(conn, parent_id, parent_step) if parent_step else ""
    return RunLinks(
        parent=others.get(parent_id),
        parent_step=parent_step or None,
        parent_step_name=step_name,
        children={invoked[c]: link for c, link in children.items()},
        original=others.get(run.original_run_id or ""),
        reruns=run_facts.reruns_of(conn, run.id),
    )


def _step_names(rows: list[HistoryEntry]) -> dict[str, str]:
    """Step id -> its name, as the timeline's entries and the ops the SDK reported name it."""
    names = {r.step_id: r.name for r in rows if r.step_id and r.name}
    for r in rows:
        for op in r.detail.ops:
            if op.name:
                names.setdefault(op.id, op.name)
    return names


def step_name(conn: Connection, run_id: str, step: str) -> str:
    """The name of a run's step given by id (or by name), as the run page shows it; the step
    as given when the run has no such step or it has no name."""
    found = step_records.get_step(conn, run_id, step)
    if found is not None and found.name:
        return found.name
    return _step_names(step_records.list_history(conn, run_id)).get(step) or step


def max_attempts_of(functions: Mapping[str, Function]) -> dict[str, int]:
    """Function id -> its attempts (the first and its retries), for the run state."""
    return {fn_id: fn.config.retries + 1 for fn_id, fn in functions.items()}


def run(conn: Connection, run_id: str) -> Run | None:
    return _current(conn, run_records.get_run(conn, run_id))


def _current(conn: Connection, run: Run | None) -> Run | None:
    """The run as readers see it: Running once its call is in the app (`handed`). A run
    queued in a FIFO lane names the lane's holder as it is now: the stored reason names the
    holder when the run joined, and rewriting every queued run at each handoff would cost as
    much as the line is long."""
    run = handed.current_run(conn, run)  # a run whose call is in the app is Running
    why = None if run is None else run.waiting
    if run is None or run.ended or why is None or why.get("gate") != GateName.LANE:
        return run
    lane = run.keys.get(fifo.LANE_KEY, {})
    holder = fifo.holder(conn, str(lane.get("hash", "")))
    if holder is None or holder in (run.id, why.get("holder_run_id")):
        return run
    return replace(run, waiting=to_json(fifo_lane.wait_reason(str(why.get("key", "")), holder)))


def step(conn: Connection, run_id: str, step_id: str) -> Step | None:
    return step_records.get_step(conn, run_id, step_id)


@record
class RunListing:
    """A page of runs, newest first, with the names of their triggering events."""

    runs: list[Run]
    event_names: dict[str, str]  # trigger event id -> name
    full: bool  # the page is full: there may be older runs
    states: dict[str, RunState] = field(default_factory=dict)  # run id -> state (if asked)
    # a text search that stopped before the oldest run: (created_at, id) of the last run it
    # examined; asking again from there searches further (queries.SEARCH_WINDOW)
    search_edge: tuple[int, str] | None = None
    search_window: int = 0  # with a search edge: how many runs the search examined


def run_listing(
    conn: Connection,
    page: RunPage,
    now: int | None = None,
    max_attempts: Mapping[str, int] | None = None,
) -> RunListing:
    """A page of runs; with `now`, each run's state too (a fixed few queries for the page)."""
    rows = queries.list_runs(conn, page)
    events = queries.events_by_ids(conn, [r.trigger_id for r in rows if r.trigger_id is not None])
    states = run_states(conn, rows, now, max_attempts or {}) if now is not None else {}
    full = len(rows) == page.limit
    edge = None if full else queries.search_edge(conn, page)
    window = queries.search_window(page) if edge is not None else 0
    return RunListing(rows, {e.id: e.name for e in events}, full, states, edge, window)


def run_event_payloads(conn: Connection, run_id: str) -> list[dict[str, Any]] | None:
    """The payloads of the events a run started from (a batch: all of them); None: no run."""
    found = run_records.get_run(conn, run_id)
    return None if found is None else event_records.load_event_payloads(conn, list(found.event_ids))


def run_memos(conn: Connection, run_id: str) -> dict[str, Any] | None:
    """Each memoized step's result by step id; None: no such run."""
    if run_records.get_run(conn, run_id) is None:
        return None
    return {m.step_id: m.memo for m in step_records.list_steps(conn, run_id)}
