"""Admission: which functions an event starts, and whether, when and how each run starts.

Per (event, function), in the order of docs/semantics.md: batching -> idempotency -> rate limit ->
debounce -> singleton -> create the run with its keys (concurrency, throttle, priority) ->
cancel-on subscriptions and the start timeout. Each gate is a plain algorithm in
`weir.platform.gates`; this module only loads and stores their state around it.
"""

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from weir.expressions import (
    BudgetExceeded,
    Expression,
    ExpressionError,
    NotHeld,
    compile_expression,
    key_hash,
)
from weir.platform.foundation.ids import new_id
from weir.platform.foundation.vocabulary import EventOutcome, GateName, SystemEvent
from weir.platform.functions import FunctionConfig
from weir.platform.gates import priority
from weir.platform.reads.run_state import clock
from weir.platform.registry import Function, Registry
from weir.platform.runtime import flow, scopes
from weir.platform.runtime.flow import gate_io, scheduled
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.keys import (
    Foresight,
    condition,
    evaluate_value,
    evaluated_once,
    prepare,
)
from weir.platform.runtime.runs import RunPlan, create_run
from weir.platform.runtime.steps.invoke import fail_invoke
from weir.platform.runtime.tx import Tx
from weir.platform.store.queue import SlotLimit
from weir.platform.store.records import events as event_records


def admit_event(tx: Tx, event_id: str, payload: dict[str, Any], received_at: int) -> None:
    if payload["name"] == SystemEvent.FUNCTION_INVOKED:
        _admit_invoke(tx, event_id, payload, received_at)
        return
    for fn, triggers in tx.registry.triggered_by(payload["name"]):
        try:
            matched = any(condition(t.expression, {"event": payload}) for t in triggers)
        except BudgetExceeded as over:
            detail = f"trigger if: {over}"
            event_records.record_outcome(
                tx.conn, event_id, fn.id, EventOutcome.EXPRESSION_OVER_BUDGET, None, detail, tx.now
            )
            continue
        if matched:
            admit(tx, Candidate(fn, [event_id], [payload], received_at))


def foresee(
    registry: Registry,
    event: dict[str, Any],
    evaluate: Callable[[Expression], Any],
    unknown: frozenset[str] = frozenset(),
    parse_ms: float = 0.0,
) -> dict[str, tuple[Any, float]]:
    """The costly evaluations `admit_event` will make for `event`, made now, in its order and
    stopping where it stops (`keys.Foresight`): each function's trigger `if`s up to the first
    that holds, then, for a function that matched, what `admit` prepares, up to the first
    exceeded budget. Run before the transaction, so the writer need not wait on them."""
    ahead = Foresight(event, evaluate, unknown, parse_ms)
    if event["name"] == SystemEvent.FUNCTION_INVOKED:
        return {}
    try:
        for fn, triggers in registry.triggered_by(event["name"]):
            matched = False
            for trigger in triggers:
                value = True if trigger.expression is None else ahead.outcome(trigger.expression)
                if isinstance(value, BudgetExceeded) or value is True:
                    matched = value is True
                    break
            if matched:
                for expression in _expressions(Candidate(fn, [""], [event], 0)):
                    if isinstance(ahead.outcome(expression), BudgetExceeded):
                        break
    except NotHeld:
        pass  # the writer evaluates the rest, as it would have all of them
    return ahead.outcomes


def declared(registry: Registry, name: str) -> tuple[Expression, ...]:
    """Every expression admitting an event named `name` may evaluate over it (trigger `if`s,
    gate and run keys of each function it triggers), compiled; kept with the registry."""
    found = registry.declared.get(name)
    if found is None:
        sources: list[str] = []
        for fn, triggers in registry.triggered_by(name):
            sources += [t.expression for t in triggers if t.expression is not None]
            sources += _expressions(Candidate(fn, [""], [{}], 0))
        found = registry.declared[name] = tuple(_compiled(dict.fromkeys(sources)))
    return found


def _compiled(sources: Iterable[str]) -> Iterator[Expression]:
    for source in sources:
        with contextlib.suppress(ExpressionError):  # checked at sync: admission says why
            yield compile_expression(source, ("event",))


def _admit_invoke(tx: Tx, event_id: str, payload: dict[str, Any], received_at: int) -> None:
    target = payload.get("data", {}).get("_inngest", {}).get("fn_id")
    fn = tx.registry.by_slug.get(str(target)) or tx.registry.by_id.get(str(target))
    if fn is None:
        fail_invoke(tx, payload, f"no function {target!r} is registered")
        return
    cand = Candidate(fn, [event_id], [payload], received_at, skip_gates=frozenset({"batch"}))
    if admit(tx, cand) is None and (refusal := _refusal(tx, event_id)) is not None:
        fail_invoke(tx, payload, f"the invoked function {fn.slug!r} started no run: {refusal}")


SKIPS = (
    EventOutcome.RATE_LIMITED,
    EventOutcome.IDEMPOTENT,
    EventOutcome.SINGLETON_SKIPPED,
    EventOutcome.DUPLICATE_EVENT_ID,
    EventOutcome.EXPRESSION_OVER_BUDGET,
    EventOutcome.INVALID_SCOPE_KEY,
    EventOutcome.FUNCTION_PAUSED,
)


def _refusal(tx: Tx, event_id: str) -> str | None:
    """Why a gate refused an invoke event outright (a debounced one still runs later)."""
    for row in event_records.outcomes_for_event(tx.conn, event_id):
        if row.outcome in SKIPS:
            return f"{row.outcome}: {row.detail}"
    return None


def admit(tx: Tx, cand: Candidate) -> str | None:
    """Run the gates in order; returns the new run's id, or None if no run starts now.

    Every expression the gates will need is evaluated first, so an event that exceeds an
    expression budget is refused whole, before any gate has spent or stored anything. A
    function paused in skip mode starts nothing: the events are marked for a later replay."""
    if tx.registry.skips(cand.fn.id):
        pause = tx.registry.paused[cand.fn.id]
        words = f"skipped: function paused since {clock(pause.paused_at)} by {pause.paused_by}"
        gate_io.record_all(tx, cand, EventOutcome.FUNCTION_PAUSED, None, words)
        return None
    with evaluated_once():
        over = prepare(_expressions(cand), {"event": cand.event})
        if over is not None:
            gate_io.record_all(tx, cand, EventOutcome.EXPRESSION_OVER_BUDGET, None, str(over))
            return None
        broken = scopes.key_problem(cand.fn, cand.event)
        if broken is not None:  # before any gate spends: the run could never take its slots
            gate_io.record_all(tx, cand, EventOutcome.INVALID_SCOPE_KEY, None, broken)
            return None
        for gate in flow.PRE_RUN_GATES:
            if not gate(tx, cand):
                break
        else:
            return start_run(tx, cand, new_id(tx.now))
    for released in cand.released:  # a batch or debounce window the gate closed
        admit(tx, released)
    return None


def _expressions(cand: Candidate) -> list[str]:
    """The expressions of the gates this candidate still passes, and of its run's keys."""
    cfg: FunctionConfig = cand.fn.config
    gated: list[tuple[str, Any, list[str | None]]] = [
        (gate_io.BATCH, cfg.batching, [_if(cfg), _key(cfg.batching)]),
        (GateName.IDEMPOTENCY, cfg.idempotency, [cfg.idempotency]),
        (GateName.RATE_LIMIT, cfg.rate_limit, [_key(cfg.rate_limit)]),
        (GateName.DEBOUNCE, cfg.debounce, [_key(cfg.debounce)]),
        (GateName.SINGLETON, cfg.singleton, [_key(cfg.singleton)]),
        (GateName.THROTTLE, cfg.throttle, [_key(cfg.throttle)]),
    ]
    found = [e for g, option, exprs in gated if gate_io.applies(cand, g, option) for e in exprs]
    found += [limit.key for limit in cfg.concurrency] + [cfg.priority_run]
    found += [cfg.lane.key] if cfg.lane is not None else []
    found += [window.key for window in cfg.rolling_windows]
    found += [scope.key for scope in cfg.scopes]
    return [e for e in found if e is not None]


def _if(cfg: FunctionConfig) -> str | None:
    return None if cfg.batching is None else cfg.batching.if_expr


def _key(option: Any) -> str | None:
    return None if option is None else option.key


def start_run(tx: Tx, cand: Candidate, run_id: str) -> str:
    plan = flow.place_start(tx, cand, plan_run(tx, cand, run_id))
    create_run(tx, plan)
    flow.after_create(tx, cand, run_id)
    return run_id


def plan_run(tx: Tx, cand: Candidate, run_id: str) -> RunPlan:
    created = tx.now
    start_at, waiting = scheduled.start_at(cand, created)  # a future event ts: then
    score = _score(cand, created)
    needs = scopes.run_limits(cand.fn, cand.event)
    limits, keys, warnings = needs.limits, needs.shown, needs.warnings
    lane = _lane(cand.fn, limits)
    return RunPlan(
        fn=cand.fn,
        event_ids=cand.event_ids,
        events=cand.events,
        start_at=start_at,
        score=score,
        lane=lane,
        limits=limits,
        keys=keys,
        warnings=cand.warnings + warnings,
        batch_id=cand.batch_id,
        cron=cand.cron,
        original_run_id=cand.original_run_id,
        waiting=waiting,
        run_id=run_id,
    )


def _score(cand: Candidate, created: int) -> int:
    expr = cand.fn.config.priority_run
    if expr is None:
        return created
    return priority.run_score_ms(created, evaluate_value(expr, cand.event))


def _lane(fn: Function, limits: tuple[SlotLimit, ...]) -> str:
    """Runs needing the same keys share a lane (the declared limits keep old lanes apart)."""
    if not any(limit.limit > 0 for limit in limits):
        return fn.id
    return "L" + key_hash(fn.id + "".join(f"|{x.key}:{x.limit}" for x in limits))[:31]
