"""The flow-control playground: play a sequence of events through one function's real gates
on a fake clock, and tell which runs start when, which events are skipped, merged or delayed.

It is the production path, not a model of it: events go through `events.accept` (admission,
every gate of `runtime/flow`), due items are claimed with the store's own `queue.claim`
(throttle at claim, concurrency slots) and timers run through `timers.handle` — against a
scratch SQLite database in memory (`store/scratch.py`) that is thrown away afterwards. The
real store is never touched. The app is not called: a started run is taken to last `run_ms`
and then complete, which is what holds its concurrency slot and its singleton lock.
"""

import heapq
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import Engine
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import SYSTEM_EVENT_PREFIX, QueueKind, RunStatus
from weir.platform.functions import EventTrigger
from weir.platform.gates.decisions import MS_PER_DAY
from weir.platform.ingest.validate import IncomingEvent
from weir.platform.registry import Function, Registry
from weir.platform.runtime import events, finish_hooks, runs, timers
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records.runs import Run
from weir.platform.store.scratch import scratch_engine
from weir.platform.store.views import queries
from weir.platform.store.views.queries import MAX_PAGE, RunPage

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: the fake clock's zero
MAX_EVENTS = 200  # each event costs a few dozen statements, as it does for real
MAX_AT_MS = 30 * MS_PER_DAY
MAX_RUN_MS = MS_PER_DAY
HORIZON_MS = 31 * MS_PER_DAY  # timers and starts are followed this far past zero
MAX_STEPS = 20_000  # a bound on the loop whatever the config does
CLAIM_BATCH = 1000
TIMER_WORDS: dict[str, str] = {
    QueueKind.BATCH: "the batch's timeout ran out",
    QueueKind.DEBOUNCE: "the debounce window closed",
    QueueKind.RUN_TIMEOUT: "a run timeout",
}


class SimulationError(ValueError):
    """The request cannot be simulated; the message says what is wrong and what is allowed."""


@record
class SimEvent:
    """One event of the sequence: when (ms after zero) and what. `name` defaults to the
    function's first event trigger; `id` is the event's own id (deduplication); `ts_ms`
    its timestamp, in ms after zero (defaults to its arrival)."""

    at_ms: int
    data: dict[str, Any]
    name: str | None = None
    id: str | None = None
    ts_ms: int | None = None


@dataclass
class SimRun:
    id: str
    events: list[int]  # indexes into the sequence
    queued_ms: int
    cause: str  # what let the run out: an event, or a timer
    started_ms: int | None = None
    ended_ms: int | None = None
    status: str = RunStatus.QUEUED
    batch_id: str | None = None
    waits: list[str] = field(default_factory=list)  # every reason it gave for not starting


@dataclass
class SimEffect:
    outcome: str  # an EventOutcome, or "started" / "queued" for a run of its own
    words: str
    run_id: str | None = None


@dataclass
class SimEventResult:
    index: int
    at_ms: int
    name: str
    effects: list[SimEffect] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)


@dataclass
class LogLine:
    at_ms: int
    kind: str  # event, queued, start, end, skip, merge, delay, timer
    text: str
    run_id: str | None = None
    event: int | None = None


@dataclass
class Simulation:
    function: str
    run_ms: int
    events: list[SimEventResult]
    runs: list[SimRun]
    log: list[LogLine]
    unfinished: bool  # the horizon or the step bound was reached with work still due


def event_name_for(fn: Function) -> str:
    """The name simulated events get by default: the first event trigger's, a wildcard's
    `*` filled in."""
    for trigger in fn.config.triggers:
        if isinstance(trigger, EventTrigger):
            return trigger.event.replace("*", "simulated")
    raise SimulationError(
        f"function {fn.slug!r} has no event trigger (only cron): there is nothing to simulate"
    )


def check(fn: Function, sequence: list[SimEvent], run_ms: int) -> None:
    """Every problem of the request, in one message."""
    problems: list[str] = []
    default = event_name_for(fn)
    if not sequence:
        problems.append("give at least one event")
    if len(sequence) > MAX_EVENTS:
        problems.append(f"{len(sequence)} events given; at most {MAX_EVENTS} are allowed")
    if not 0 <= run_ms <= MAX_RUN_MS:
        problems.append(f"run_ms = {run_ms} must be between 0 and {MAX_RUN_MS} (one day)")
    probe = Registry()
    probe.add(fn)
    for i, ev in enumerate(sequence[:MAX_EVENTS]):
        if not 0 <= ev.at_ms <= MAX_AT_MS:
            problems.append(f"events[{i}].at_ms = {ev.at_ms} must be between 0 and {MAX_AT_MS}")
        if ev.ts_ms is not None and not 0 <= ev.ts_ms <= HORIZON_MS:
            problems.append(f"events[{i}].ts_ms = {ev.ts_ms} must be between 0 and {HORIZON_MS}")
        name = ev.name or default
        if name.startswith(SYSTEM_EVENT_PREFIX):
            problems.append(f"events[{i}].name = {name!r}: names starting with inngest/ are Weir's")
        elif not probe.triggered_by(name):
            problems.append(f"events[{i}].name = {name!r} does not trigger {fn.slug!r}")
    if problems:
        raise SimulationError("; ".join(problems))


def simulate(
    fn: Function, sequence: list[SimEvent], run_ms: int = 0, base_ms: int = BASE_MS
) -> Simulation:
    """Play `sequence` through `fn`'s gates; raises SimulationError on a bad request. Times
    in the answer are ms after zero, which is `base_ms` on the fake clock."""
    check(fn, sequence, run_ms)
    engine = scratch_engine()
    try:
        return _Player(engine, fn, run_ms, base_ms).play(sequence)
    finally:
        engine.dispose()


class _Player:
    def __init__(self, engine: Engine, fn: Function, run_ms: int, base_ms: int) -> None:
        self.engine, self.fn, self.run_ms, self.base = engine, fn, run_ms, base_ms
        self.registry = Registry()
        self.registry.add(fn)
        self.rng = random.Random(0)  # jitter, if any, is the same on every replay
        self.now = base_ms
        self.ends: list[tuple[int, int, q.Claimed]] = []  # (end ms, item id, item) heap
        self.runs: dict[str, SimRun] = {}
        self.event_index: dict[str, int] = {}  # stored event id -> index in the sequence
        self.results: list[SimEventResult] = []
        self.log: list[LogLine] = []
        self.name = event_name_for(fn)

    @contextmanager
    def tx(self, now: int) -> Iterator[Tx]:
        with self.engine.begin() as conn:
            tx = Tx(conn, now, self.registry, self.rng)
            yield tx
            ended = list(tx.ended)
            finish_hooks.settle(tx)  # as Platform.write does after every transition
        for end in ended:  # every run that ends, ends in some transition: noted here
            self._ended(end.run.id, end.status, end.error, now)

    def play(self, sequence: list[SimEvent]) -> Simulation:
        self.results = [
            SimEventResult(i, ev.at_ms, ev.name or self.name) for i, ev in enumerate(sequence)
        ]
        order = sorted(range(len(sequence)), key=lambda i: sequence[i].at_ms)
        pending = [(i, sequence[i]) for i in order]
        unfinished = self._loop(pending)
        self._collect_effects()
        return Simulation(
            self.fn.slug,
            self.run_ms,
            self.results,
            sorted(self.runs.values(), key=lambda r: (r.queued_ms, r.id)),
            sorted(self.log, key=lambda line: line.at_ms),  # stable: same-ms lines keep order
            unfinished,
        )

    def _loop(self, pending: list[tuple[int, SimEvent]]) -> bool:
        """Move the fake clock from one thing to the next: run ends first, then due items,
        then the next event. True if it stopped with work still due."""
        stuck_at = -1  # a due time at which a claim found nothing it could take
        for _ in range(MAX_STEPS):
            end = self.ends[0][0] if self.ends else None
            due = self._next_due()
            if due is not None and due <= stuck_at:
                due = None
            arrival = self.base + pending[0][1].at_ms if pending else None
            if end is not None and all(end <= t for t in (due, arrival) if t is not None):
                self._end_runs(end)
                stuck_at = -1  # a freed slot may let a parked lane go
            elif due is not None and (arrival is None or due <= arrival):
                if due > self.base + HORIZON_MS:
                    return True
                if not self._claim(max(due, self.now)):
                    stuck_at = max(due, self.now)
            elif pending:
                index, ev = pending.pop(0)
                self._accept(index, ev)
                stuck_at = -1
            else:
                return self._next_due() is not None
        return True

    def _next_due(self) -> int | None:
        with self.engine.connect() as conn:
            return q.next_due(conn)

    # -- the steps -----------------------------------------------------------------------
    def _accept(self, index: int, ev: SimEvent) -> None:
        at = self.base + ev.at_ms
        self.now = max(self.now, at)
        ts = at if ev.ts_ms is None else self.base + ev.ts_ms
        data = dict(ev.data)
        incoming = IncomingEvent(ev.name or self.name, data, ev.id, ts, {}, None)
        with self.tx(self.now) as tx:
            [event_id] = events.accept(tx, [incoming])
        self.event_index[event_id] = index
        self.log.append(LogLine(ev.at_ms, "event", f"event #{index} arrives", event=index))
        self._new_runs(f"event #{index}")

    def _claim(self, now: int) -> bool:
        self.now = now
        with self.engine.begin() as conn:
            claimed = q.claim(conn, now, CLAIM_BATCH, self.run_ms + 1)
        for item in claimed:
            if item.kind == QueueKind.EXEC:
                self._start(item, now)
            else:
                with self.tx(now) as tx:
                    timers.handle(tx, item)
                self._new_runs(TIMER_WORDS.get(item.kind, f"a {item.kind} timer"))
        return bool(claimed)

    def _start(self, item: q.Claimed, now: int) -> None:
        with self.tx(now) as tx:
            run = run_records.get_run(tx.conn, item.run_id or "")
            if run is None or run.ended:
                q.finish(tx.conn, item, now)
                return
            runs.mark_started(tx, run, now)
        sim = self.runs[run.id]
        sim.started_ms, sim.status = now - self.base, RunStatus.RUNNING
        late = now - self.base - sim.queued_ms
        if late and not sim.waits and self.fn.config.concurrency:
            # the claim passed it over while every slot of a key was taken; nothing is stored
            sim.waits.append("concurrency: waiting for a free slot")
        why = f" ({late} ms after it was queued" + (f": {sim.waits[-1]})" if sim.waits else ")")
        why = why if late else ""
        self.log.append(
            LogLine(now - self.base, "start", f"run {_short(run.id)} starts{why}", run.id)
        )
        heapq.heappush(self.ends, (now + self.run_ms, item.id, item))

    def _end_runs(self, at: int) -> None:
        self.now = max(self.now, at)
        while self.ends and self.ends[0][0] <= at:
            _, _, item = heapq.heappop(self.ends)
            with self.tx(at) as tx:
                q.finish(tx.conn, item, at)
                runs.finish_run(tx, item.run_id or "", RunStatus.COMPLETED, None)

    # -- reading back ----------------------------------------------------------------------
    def _new_runs(self, cause: str) -> None:
        """Runs created just now (a step runs at one ms, so they were created at `now`)."""
        page = RunPage(limit=MAX_PAGE, function_id=self.fn.id, since_ms=self.now)
        found: list[Run] = []
        with self.engine.connect() as conn:
            while True:
                rows = queries.list_runs(conn, page)
                found += rows
                if len(rows) < page.limit:
                    break
                last = rows[-1]
                page = replace(page, before=(last.created_at, last.id))
        for run in reversed(found):  # oldest first
            if run.id not in self.runs:
                self._queued(run, cause)

    def _queued(self, run: Run, cause: str) -> None:
        indexes = [self.event_index[e] for e in run.event_ids if e in self.event_index]
        sim = SimRun(run.id, indexes, run.created_at - self.base, cause, batch_id=run.batch_id)
        self.runs[run.id] = sim
        for i in indexes:
            self.results[i].runs.append(run.id)
        what = (
            f"events {', '.join(f'#{i}' for i in indexes)}"
            if len(indexes) > 1
            else (f"event #{indexes[0]}" if indexes else "no stored event")
        )
        text = f"run {_short(run.id)} queued with {what}, let out by {cause}"
        self.log.append(LogLine(sim.queued_ms, "queued", text, run.id))
        self._refresh(sim, run)

    def _refresh(self, sim: SimRun, run: Run) -> None:
        """The reason a new run gave for not starting at once (a throttle slot)."""
        words = run.waiting.get("words") if isinstance(run.waiting, dict) else None
        if isinstance(words, str) and words:
            sim.waits.append(words)
            self.log.append(
                LogLine(self.now - self.base, "delay", f"run {_short(sim.id)}: {words}", sim.id)
            )

    def _ended(self, run_id: str, status: str, error: dict[str, Any] | None, at: int) -> None:
        sim = self.runs.get(run_id)
        if sim is None or sim.ended_ms is not None:
            return
        sim.ended_ms, sim.status = at - self.base, status
        reason = str(error.get("message", "")) if status == RunStatus.CANCELLED and error else ""
        text = f"run {_short(run_id)} {status.lower()}" + (f": {reason}" if reason else "")
        self.log.append(LogLine(sim.ended_ms, "end", text, run_id))

    def _collect_effects(self) -> None:
        with self.engine.connect() as conn:
            for event_id, index in self.event_index.items():
                result = self.results[index]
                for row in event_records.outcomes_for_event(conn, event_id):
                    kind = "merge" if row.outcome in MERGES else "skip"
                    effect = SimEffect(row.outcome, row.detail or row.outcome, row.run_id)
                    result.effects.append(effect)
                    text = f"event #{index}: {row.detail or row.outcome}"
                    self.log.append(LogLine(row.at - self.base, kind, text, row.run_id, index))
                for run_id in result.runs:
                    sim = self.runs[run_id]
                    word = "started" if sim.started_ms is not None else "queued"
                    result.effects.append(SimEffect(word, _run_words(sim), run_id))


MERGES = frozenset({"batched", "debounced"})


def _short(run_id: str) -> str:
    return run_id[-6:]


def _run_words(sim: SimRun) -> str:
    if sim.started_ms is None:
        return f"run {_short(sim.id)} queued at {sim.queued_ms} ms, not started"
    return f"run {_short(sim.id)} started at {sim.started_ms} ms"
