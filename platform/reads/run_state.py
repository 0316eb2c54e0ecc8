"""A run's state and the reason for it, derived in one place: what the run page, the runs
list, `GET /v1/runs/{id}` (`state`, and `waiting` while it waits) and GraphQL `run.state` show.

The state is derived from the run's row and a few facts read beside it (`store.run_facts`):
its queued or executing calls, its open sleeps, waits and invokes, the slots of its
concurrency keys and who holds them, and the gate a flow-control step wrote into
`runs.waiting`. A gate this module does not know (a new one) still shows: its `waiting` JSON
becomes a `GATE` state named by its `gate`, with its words, its time and its other fields.
"""

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.foundation.vocabulary import HistoryKind, RunStateKind, RunStatus
from weir.platform.store.flow import capacity
from weir.platform.store.records import pauses
from weir.platform.store.records.pauses import FunctionPause
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import HistoryEntry
from weir.platform.store.views import run_facts
from weir.platform.store.views.run_facts import CallFacts, RunItem, RunLink

DISCOVERY = "step"  # the step id of a call that runs the function from the top
# `runs.waiting` gates with a state of their own; any other gate is shown generically.
RETRY, THROTTLE, CONCURRENCY = "retry", "throttle", "concurrency"
SCOPE = "scope"  # a run's keys name its resource scopes scope0, scope1, ...
_KNOWN_FIELDS = {"gate", "key", "until_ms", "words", "error"}


def clock(ms: int | None) -> str | None:
    """Epoch ms as ISO 8601 UTC with milliseconds (the APIs' and the words' time format)."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")


@record(slots=True)
class KeyUse:
    """A concurrency key as it stands: its text, slots used of its limit, and the runs
    holding them (a run appears once per executing step)."""

    key: str
    used: int
    limit: int
    holders: tuple[str, ...]

    @property
    def full(self) -> bool:
        return self.limit > 0 and self.used >= self.limit


@record(slots=True)
class RunState:
    """What the run does or waits for. Which fields are set depends on `kind`."""

    kind: RunStateKind
    words: str  # one sentence, the same everywhere it is shown
    gate: str = ""  # the flow-control gate holding it (concurrency, throttle, or a new one)
    since: int | None = None  # ms: when this state began, if known
    until: int | None = None  # ms: when it ends by itself, if it does
    step_id: str | None = None
    step_name: str = ""
    attempt: int | None = None  # 1-based, of the call executing or coming next
    max_attempts: int | None = None
    key: str | None = None  # the gate's key text ("" for the function-wide bucket)
    slots: tuple[KeyUse, ...] = ()
    event: str | None = None  # waiting for: the event name
    expression: str | None = None  # and the `if` it must meet
    function: str | None = None  # invoking: the function
    child_run_id: str | None = None  # invoking: the run it started
    error: str | None = None  # backoff: the failed attempt's error message
    details: dict[str, Any] = field(default_factory=dict)  # a gate's other fields
    also: tuple["RunState", ...] = ()  # other open steps (parallel sleeps, waits, invokes)

    @property
    def waiting(self) -> bool:
        """Held by something other than a worker at work (or the end)."""
        return self.kind not in (RunStateKind.EXECUTING, RunStateKind.ENDED)

    def to_json(self) -> dict[str, Any]:
        """The shape REST answers and GraphQL's `RunState` type mirrors, field for field."""
        return {
            "kind": str(self.kind),
            "words": self.words,
            "gate": self.gate or None,
            "since": clock(self.since),
            "until": clock(self.until),
            "step_id": self.step_id,
            "step_name": self.step_name or None,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "key": self.key,
            "slots": [
                {"key": s.key, "used": s.used, "limit": s.limit, "holders": list(s.holders)}
                for s in self.slots
            ],
            "event": self.event,
            "expression": self.expression,
            "function": self.function,
            "child_run_id": self.child_run_id,
            "error": self.error,
            "details": self.details,
            "also": [a.to_json() for a in self.also],
        }


@record(slots=True)
class CallInFlight:
    """A call handed to the app and not answered yet (its lease is live): the run's timeline
    shows it as a row before its answer writes the real one."""

    item_id: int  # its queue item
    item_step: str  # the step id the call is addressed to: DISCOVERY runs the function
    step_id: str | None  # the step it runs when Weir knows it (planned, or retried); else None
    step_name: str  # that step's name ("" if unknown)
    attempt: int  # 1-based
    started_at: int | None  # its claim
    first: bool  # no step of the run has completed before it

    @property
    def finding(self) -> str:
        """What a call of the function with no step known yet does: the SDK runs it from the
        top, past the steps that have results, and only its answer says which step came next."""
        return f"finding its {'first' if self.first else 'next'} step"

    @property
    def what(self) -> str:
        if self.step_id:
            return f"step {self.step_name or self.step_id}"
        return f"the function, {self.finding}"


@record
class StateFacts:
    """Everything `derive` needs beside the runs, for a set of runs (see `load_facts`)."""

    items: dict[str, list[RunItem]]
    open_entries: dict[str, list[HistoryEntry]]
    holders: dict[str, list[str]]  # concurrency key hash -> runs holding its live slots
    parked: dict[str, str]  # lane -> key hash it is parked on
    children: dict[str, RunLink]  # correlation id -> invoked run
    calls: CallFacts  # step names, and the step a retried call runs again
    # concurrency capacity id -> its live size: slots are counted against it, not the
    # declared limit (an operator may have raised or cut it)
    sizes: dict[str, int] = field(default_factory=dict)
    paused: dict[str, FunctionPause] = field(default_factory=dict)  # by function id


def load_facts(conn: Connection, found: Sequence[Run], now: int) -> StateFacts:
    """A fixed handful of queries whatever the number of runs; ended runs need none."""
    live = [r for r in found if not r.ended]
    ids = [r.id for r in live]
    items = run_facts.run_items(conn, ids)
    entries = run_facts.open_entries(conn, ids)
    keys = [k for r in live for k in _concurrency_keys(r) if k.limit > 0]
    hashes = {k.hash for k in keys}
    # Step names matter for a planned step's call and for a retried call (which reruns the
    # step whose error the last call reported).
    named = [r for r in ids if any(i.step_id != DISCOVERY or i.attempt > 0 for i in items[r])]
    correlations = [
        f"{e.run_id}.{e.step_id}"
        for rows in entries.values()
        for e in rows
        if e.kind == HistoryKind.INVOKE
    ]
    return StateFacts(
        items=items,
        open_entries=entries,
        holders=run_facts.slot_holders(conn, hashes, now),
        parked=run_facts.parked_lanes(conn, {r.lane for r in live}),
        children=run_facts.runs_by_correlation(conn, correlations),
        calls=run_facts.call_facts(conn, named),
        sizes=capacity.concurrency_sizes(conn, [k.capacity for k in keys if k.capacity]),
        paused=pauses.paused_of(conn, {r.function_id for r in live}),
    )


def run_states(
    conn: Connection, found: Sequence[Run], now: int, max_attempts: Mapping[str, int]
) -> dict[str, RunState]:
    """Each run's state by run id; `max_attempts` maps a function id to its attempts."""
    facts = load_facts(conn, found, now)
    return {r.id: derive(r, facts, now, max_attempts.get(r.function_id)) for r in found}


def run_state(conn: Connection, run: Run, now: int, max_attempts: Mapping[str, int]) -> RunState:
    return run_states(conn, [run], now, max_attempts)[run.id]


# -- deriving ----------------------------------------------------------------------------------
def derive(run: Run, facts: StateFacts, now: int, max_attempts: int | None) -> RunState:
    if run.ended:
        return _ended(run)
    opened = [_open_step(e, facts) for e in facts.open_entries.get(run.id, [])]
    items = facts.items.get(run.id, [])
    pause = facts.paused.get(run.function_id) if facts.paused else None
    if pause is not None and items and not any(_live(i, now) for i in items):
        return replace(_paused(pause), also=tuple(opened))
    call = _call_state(run, items, facts, now, max_attempts)
    if call is not None:
        return replace(call, also=tuple(opened))
    if opened:
        return replace(opened[0], also=tuple(opened[1:]))
    waiting = run.waiting if isinstance(run.waiting, dict) else None
    if waiting is not None and waiting.get("gate") not in (RETRY, None):
        return _gate(waiting, now)
    # No call queued, nothing open: between two transitions (or a timer is about to fire).
    return RunState(RunStateKind.QUEUED, "queued: waiting for the scheduler", since=run.created_at)


def _paused(pause: FunctionPause) -> RunState:
    """Its next call waits: no call of a paused function is claimed until it resumes."""
    words = (
        f"paused: the function was paused ({pause.mode}) at {clock(pause.paused_at)} by "
        f"{pause.paused_by}; the run goes on from its next step when the function resumes"
    )
    details = {"mode": str(pause.mode), "paused_by": pause.paused_by}
    return RunState(
        RunStateKind.PAUSED, words, gate="pause", since=pause.paused_at, details=details
    )


_ENDED_WORDS = {
    RunStatus.COMPLETED: "completed",
    RunStatus.FAILED: "failed",
    RunStatus.CANCELLED: "cancelled",
    RunStatus.SKIPPED: "skipped",
}


def _ended(run: Run) -> RunState:
    words = f"{_ENDED_WORDS.get(run.status, str(run.status).lower())} at {clock(run.ended_at)}"
    output = run.output if isinstance(run.output, dict) else {}
    error = str(output.get("message", "")) or None if run.status != RunStatus.COMPLETED else None
    return RunState(RunStateKind.ENDED, words, since=run.ended_at, error=error)


def _call_state(
    run: Run, items: list[RunItem], facts: StateFacts, now: int, max_attempts: int | None
) -> RunState | None:
    if not items:
        return None
    live = [i for i in items if _live(i, now)]
    if live:
        return _executing(run, live[0], facts, max_attempts)
    item = items[0]  # the earliest due
    step = _step_fields(run, item, facts, max_attempts)
    waiting = run.waiting if isinstance(run.waiting, dict) else {}
    gate = waiting.get("gate")
    until = waiting.get("until_ms") if isinstance(waiting.get("until_ms"), int) else None
    if gate == RETRY and item.available_at > now:
        at = until if until is not None else item.available_at
        named = f" of step {step['step_name'] or step['step_id']}" if step["step_id"] else ""
        words = f"backoff: attempt {_of(step)}{named} starts at {clock(at)}"
        if waiting.get("error"):
            words += f" (the last attempt failed: {waiting['error']})"
        return RunState(
            RunStateKind.BACKOFF, words, until=at, error=waiting.get("error") or None, **step
        )
    if gate == THROTTLE and item.available_at > now:
        at = until if until is not None else item.available_at
        key = str(waiting.get("key", ""))
        words = f"throttle: the start waits for its slot at {clock(at)}{_key_words(key)}"
        return RunState(RunStateKind.THROTTLE, words, gate=THROTTLE, until=at, key=key, **step)
    if gate not in (None, RETRY, THROTTLE, CONCURRENCY) and isinstance(gate, str):
        return replace(_gate(waiting, now), **step)  # a gate this module does not know yet
    if item.available_at > now:
        words = f"queued: due at {clock(item.available_at)}"
        return RunState(RunStateKind.QUEUED, words, until=item.available_at, **step)
    full = _full_keys(run, facts)
    if full:
        return _concurrency(full, item, step)
    words = f"queued: due since {clock(item.available_at)}, waiting for a worker"
    boost = run.created_at - run.score
    details: dict[str, Any] = {}
    if boost:
        ahead = "ahead of" if boost > 0 else "behind"
        words += f"; priority puts it {abs(boost) // 1000} s {ahead} runs queued with it"
        details["priority_ms"] = boost
    return RunState(RunStateKind.QUEUED, words, since=item.available_at, details=details, **step)


def _executing(run: Run, item: RunItem, facts: StateFacts, max_attempts: int | None) -> RunState:
    step = _step_fields(run, item, facts, max_attempts)
    call = _in_flight(run, item, step)
    since = call.started_at
    words = f"executing {call.what}, attempt {_of(step)}"
    if since is not None:
        words += f", since {clock(since)}"
    return RunState(RunStateKind.EXECUTING, words, since=since, **step)


def calls_in_flight(run: Run, facts: StateFacts, now: int) -> list[CallInFlight]:
    """The run's calls in the app now, the earliest due first (as `facts.items`)."""
    live = [i for i in facts.items.get(run.id, []) if _live(i, now)]
    return [_in_flight(run, i, _step_fields(run, i, facts, None)) for i in live]


def _live(item: RunItem, now: int) -> bool:
    """Leased and the lease not lapsed (a lapsed one is claimable again: its holder died)."""
    return item.leased and item.available_at > now


def _in_flight(run: Run, item: RunItem, step: dict[str, Any]) -> CallInFlight:
    """`step`: the item's step fields (`_step_fields`)."""
    return CallInFlight(
        item_id=item.id,
        item_step=item.step_id,
        step_id=step["step_id"],
        step_name=step["step_name"],
        attempt=step["attempt"],
        started_at=item.claimed_at,
        first=run.step_count == 0,
    )


def _step_fields(
    run: Run, item: RunItem, facts: StateFacts, max_attempts: int | None
) -> dict[str, Any]:
    step: str | None = item.step_id
    if step == DISCOVERY:  # a retry runs again the step whose error stopped the last call
        step = facts.calls.failed_step.get(run.id) if item.attempt > 0 else None
    return {
        "step_id": step,
        "step_name": facts.calls.names.get((run.id, step), "") if step else "",
        "attempt": item.attempt + 1,
        "max_attempts": max_attempts,
    }


def _of(step: dict[str, Any]) -> str:
    most = step.get("max_attempts")
    return f"{step['attempt']} of {most}" if most else str(step["attempt"])


def _key_words(key: str) -> str:
    return f" (key {key!r})" if key else ""


@record(slots=True)
class _Key:
    hash: str
    text: str
    limit: int  # the limit its code declares (a live capacity may differ)
    capacity: str  # the capacity's id ("": none)


def _concurrency_keys(run: Run) -> list[_Key]:
    """Each concurrency limit and resource scope the run carries, in config order."""
    found = []
    for name in sorted(run.keys):
        value = run.keys[name]
        if not isinstance(value, dict) or not value.get("hash"):
            continue
        cap = str(value.get("capacity") or "")
        if name.startswith(CONCURRENCY):
            text = str(value.get("key", ""))
        elif name.startswith(SCOPE):  # a resource scope: named by the scope, then its key
            text = " ".join(str(part) for part in (value.get("scope"), value.get("key")) if part)
        else:
            continue
        found.append(_Key(str(value["hash"]), text, int(value["limit"]), cap))
    return found


def _full_keys(run: Run, facts: StateFacts) -> list[KeyUse]:
    parked = facts.parked.get(run.lane)
    uses = []
    for k in _concurrency_keys(run):
        if k.limit <= 0:
            continue
        key_hash, text, limit = k.hash, k.text, facts.sizes.get(k.capacity, k.limit)
        holders = facts.holders.get(key_hash, [])
        use = KeyUse(text, len(holders), limit, tuple(holders))
        # A parked lane counts as blocked even if a slot freed a moment ago: it is woken next.
        if use.full or parked == key_hash:
            uses.append(use)
    return uses


def _concurrency(full: list[KeyUse], item: RunItem, step: dict[str, Any]) -> RunState:
    parts = []
    for use in full:
        holders = ", ".join(dict.fromkeys(use.holders)) or "none right now"
        named = f"key {use.key!r}" if use.key else "the function-wide limit"
        parts.append(f"{named}: {use.used}/{use.limit} slots in use, held by {holders}")
    words = "concurrency: due, waiting for a free slot; " + "; ".join(parts)
    return RunState(
        RunStateKind.CONCURRENCY,
        words,
        gate=CONCURRENCY,
        since=item.available_at,
        key=full[0].key,
        slots=tuple(full),
        **step,
    )


def _gate(waiting: dict[str, Any], now: int) -> RunState:
    until = waiting.get("until_ms")
    until = until if isinstance(until, int) and not isinstance(until, bool) else None
    gate = str(waiting.get("gate") or "gate")
    words = str(waiting.get("words") or f"{gate}: waiting")
    key = waiting.get("key")
    details = {k: v for k, v in waiting.items() if k not in _KNOWN_FIELDS}
    return RunState(
        RunStateKind.GATE,
        words,
        gate=gate,
        until=until,
        key=str(key) if key is not None else None,
        details=details,
    )


def _open_step(entry: HistoryEntry, facts: StateFacts) -> RunState:
    name = entry.name or entry.step_id or ""
    detail = entry.detail
    common: dict[str, Any] = {
        "since": entry.started_at,
        "step_id": entry.step_id,
        "step_name": name,
    }
    if entry.kind == HistoryKind.SLEEP:
        words = f"sleeping until {clock(detail.until)} (step {name})"
        return RunState(RunStateKind.SLEEPING, words, until=detail.until, **common)
    if entry.kind == HistoryKind.WAIT and detail.signal:
        condition = f" where {detail.expression}" if detail.expression else ""
        words = (
            f"waiting for signal `{detail.signal}`{condition} since {clock(entry.started_at)}"
            f" until {clock(detail.until)} (step {name})"
        )
        return RunState(
            RunStateKind.WAITING_FOR_SIGNAL,
            words,
            until=detail.until,
            expression=detail.expression,
            details={"signal": detail.signal},
            **common,
        )
    if entry.kind == HistoryKind.WAIT:
        condition = f" where {detail.expression}" if detail.expression else ""
        words = (
            f"waiting for event {detail.event}{condition} until {clock(detail.until)} (step {name})"
        )
        return RunState(
            RunStateKind.WAITING_FOR_EVENT,
            words,
            until=detail.until,
            event=detail.event,
            expression=detail.expression,
            **common,
        )
    if entry.kind == HistoryKind.INVOKE:
        child = facts.children.get(f"{entry.run_id}.{entry.step_id}")
        started = f": run {child.id}, {child.status.lower()}" if child else ""
        words = f"invoking function {detail.function}{started} (step {name})"
        return RunState(
            RunStateKind.INVOKING,
            words,
            function=detail.function,
            child_run_id=child.id if child else None,
            **common,
        )
    words = f"{entry.kind} in progress (step {name})"
    return RunState(RunStateKind.GATE, words, gate=str(entry.kind), **common)
