"""Rerun: a new run of the same function from the same event(s), linked to the original.

A rerun "from a step" keeps the memoized results of the steps the original completed before
that step (in completion order): the new run replays them and runs that step and everything
after it again.

Composed from the runtime's own admission steps. It skips the pre-run gates (idempotency,
rate limit, debounce, batching, singleton): a person asked for this run explicitly. The run
still takes its concurrency keys, throttle slot and priority like any other.
"""

import json
from typing import Any

from weir.platform.foundation import jsonvalues
from weir.platform.foundation.ids import new_id
from weir.platform.foundation.vocabulary import Opcode
from weir.platform.runtime.admission import start_run
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.scopes import ScopeKeyError
from weir.platform.runtime.tx import Tx
from weir.platform.store.records import events as event_records
from weir.platform.store.records import runs as run_records
from weir.platform.store.records import steps as step_records


class RerunError(Exception):
    pass


class RerunInputError(ValueError):
    """A step's new input that cannot be given: says what is allowed."""


def step_input(value: Any, where: str) -> list[Any]:
    """`value` (named `where` in the request) as a step's new input: a JSON array of values a
    run can keep, or RerunInputError saying what is wrong."""
    if not isinstance(value, list):
        raise RerunInputError(f"{where} must be a JSON array: the step's arguments, in order")
    problem = jsonvalues.problem(value, where)
    if problem:
        raise RerunInputError(problem)
    return value


def step_input_text(text: bytes, where: str) -> list[Any]:
    """`step_input` of JSON text (a form's field, GraphQL's `Bytes`)."""
    try:
        value = jsonvalues.loads(text)
    except ValueError as exc:
        raise RerunInputError(f"{where} is not JSON ({exc})") from None
    return step_input(value, where)


def rerun(
    tx: Tx, run_id: str, from_step: str | None = None, step_input: list[Any] | None = None
) -> str:
    """The new run's id; with `from_step` (a step id or name of the original), the steps
    completed before it are kept; with `step_input` too, that step is given it instead of
    what it was given before (`_input_via` says which steps can be)."""
    if step_input is not None and from_step is None:
        raise RerunError("an input replaces a step's input: name the step (from_step)")
    run = run_records.get_run(tx.conn, run_id)
    if run is None:
        raise RerunError(f"there is no run with id {run_id!r}")
    fn = tx.registry.by_id.get(run.function_id)
    if fn is None or fn.archived:
        raise RerunError("its function is no longer part of any synced app")
    ids = list(run.event_ids)
    payloads = event_records.load_event_payloads(tx.conn, ids)
    if not payloads:
        raise RerunError("its triggering events are no longer stored")
    cand = Candidate(
        fn, ids, payloads, tx.now, batch_id=run.batch_id, cron=run.cron, original_run_id=run.id
    )
    kept, chosen = _steps_before(tx, run_id, from_step) if from_step is not None else ([], None)
    via = _input_via(tx, run_id, chosen, step_input) if chosen and step_input is not None else ""
    try:
        new_run = start_run(tx, cand, new_id(tx.now))
    except ScopeKeyError as broken:
        raise RerunError(str(broken)) from None
    _keep(tx, new_run, kept)
    if chosen is not None and step_input is not None:
        _give_input(tx, new_run, chosen.step_id, step_input, via)
    return new_run


def _steps_before(
    tx: Tx, run_id: str, from_step: str
) -> tuple[list[step_records.Step], step_records.Step]:
    done = step_records.list_steps(tx.conn, run_id)
    chosen = next((s for s in done if s.step_id == from_step), None)
    chosen = chosen or next((s for s in done if s.name and s.name == from_step), None)
    if chosen is None:
        names = ", ".join(s.name or s.step_id for s in done) or "none"
        raise RerunError(f"it has no completed step {from_step!r} (its steps: {names})")
    return [s for s in done if s.seq < chosen.seq], chosen


def _input_via(tx: Tx, run_id: str, step: step_records.Step, given: list[Any]) -> str:
    """How the new input reaches the step: "ai", the body of the request Weir makes for a
    step.ai.infer step (one item: an object), or "sdk", the arguments of a step.run whose SDK
    sent its own (weir.sdk, Inngest's TypeScript SDK; the official Python SDK sends none)."""
    name = step.name or step.step_id
    if step.op == Opcode.AI_GATEWAY:
        if len(given) != 1 or not isinstance(given[0], dict):
            raise RerunError(
                f"the input of step.ai.infer step {name!r} is its request body: "
                "send an array of one JSON object"
            )
        return "ai"
    rows = step_records.list_history(tx.conn, run_id)
    if any(o.id == step.step_id and o.input is not None for r in rows for o in r.detail.ops):
        return "sdk"
    raise RerunError(
        f"step {name!r} reported no input: its SDK does not send a step.run's arguments "
        "(weir.sdk and Inngest's TypeScript SDK do, the official Python SDK does not), "
        "so there is nothing to replace"
    )


def _give_input(tx: Tx, run_id: str, step_id: str, given: list[Any], via: str) -> None:
    run = run_records.get_run(tx.conn, run_id)
    if run is None:  # it was just made in this transaction
        return
    run_records.set_rerun_input(tx.conn, run, step_id, given, via)
    if tx.next_call.run is not None and tx.next_call.run.id == run_id:
        tx.next_call.run = None  # its first call reads the run with the input afresh


def _keep(tx: Tx, run_id: str, kept: list[step_records.Step]) -> None:
    """Copy the kept results onto the new run, as though it had just completed them."""
    size = 0
    for seq, step in enumerate(kept):
        text = json.dumps(step.memo, separators=(",", ":"))
        step_records.save_memo(tx.conn, run_id, step.step_id, seq, step.name, step.op, text, tx.now)
        size += len(text)
    if kept:
        run_records.step_saved(
            tx.conn, run_id, step_count=len(kept), state_bytes=size, pending=[], force_plan=False
        )
