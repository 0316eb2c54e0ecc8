"""What every flow-control gate needs around its pure algorithm: its key, its stored state,
and the record left on each event it took."""

from dataclasses import replace
from typing import Any, TypeVar

from weir.platform.foundation.vocabulary import EventOutcome
from weir.platform.gates import gcra
from weir.platform.gates.decisions import from_json, to_json
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.keys import EvaluatedKey, evaluate_key
from weir.platform.runtime.runs import RunPlan
from weir.platform.runtime.tx import Tx
from weir.platform.store.flow import gate_state as gatestate
from weir.platform.store.records import events as event_records

BATCH = gatestate.BATCH_GATE

S = TypeVar("S")


def gate_key(cand: Candidate, gate: str, expression: str | None) -> EvaluatedKey:
    """The candidate's key for `gate`; a failing expression leaves a warning on the run."""
    key = evaluate_key(f"{gate}\x00{cand.fn.id}", expression, cand.event)
    if key.warning is not None:
        note = f"{gate}: {key.warning}"
        if note not in cand.warnings:  # a key may be evaluated more than once per run
            cand.warnings.append(note)
    return key


def load_row(tx: Tx, gate: str, key_hash: str) -> dict[str, Any] | None:
    """The gate's stored state for this key, held until the transaction ends."""
    return gatestate.load_for_update(tx.conn, gate, key_hash, tx.now)


def load_state(tx: Tx, gate: str, key_hash: str, cls: type[S]) -> S | None:
    stored = load_row(tx, gate, key_hash)
    return None if stored is None else from_json(cls, stored)


def load_meter(tx: Tx, gate: str, key_hash: str) -> gcra.GcraState | None:
    return load_state(tx, gate, key_hash, gcra.GcraState)


def save_meter(tx: Tx, gate: str, key_hash: str, state: gcra.GcraState) -> None:
    # Once the TAT is past the meter behaves as a fresh one, so the row may expire then.
    expires = -(-state.tat // state.scale)
    gatestate.save(tx.conn, gate, key_hash, to_json(state), expires)


def record_all(
    tx: Tx, cand: Candidate, outcome: EventOutcome, run_id: str | None, detail: str
) -> None:
    """Leave the same record on every event of the candidate (a batch has several)."""
    for event_id in cand.event_ids:
        event_records.record_outcome(tx.conn, event_id, cand.fn.id, outcome, run_id, detail, tx.now)


def applies(cand: Candidate, gate: str, option: Any) -> bool:
    """The gate is configured on the function and the candidate has not passed it already."""
    return option is not None and gate not in cand.skip_gates


def with_late_warnings(cand: Candidate, plan: RunPlan) -> RunPlan:
    """Warnings of keys evaluated after the plan was made (throttle, singleton) join the run."""
    late = [w for w in cand.warnings if w not in plan.warnings]
    return replace(plan, warnings=plan.warnings + late) if late else plan
