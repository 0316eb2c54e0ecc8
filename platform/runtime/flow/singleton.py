"""Singleton: one active run per key for the whole run; the lock lives in gate_state.

The gate only decides (skip, or go on); the lock is taken once the new run exists, and in
`cancel` mode the holder is cancelled at that moment, so no holder is cancelled for a run that
a later check (a duplicate event id) then refuses.
"""

from dataclasses import replace

from weir.platform.foundation.vocabulary import EventOutcome, GateName
from weir.platform.gates import singleton
from weir.platform.gates.decisions import key_text
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.flow.gate_io import gate_key, load_row, record_all
from weir.platform.runtime.keys import EvaluatedKey
from weir.platform.runtime.runs import RunPlan, cancel_run
from weir.platform.runtime.tx import Tx
from weir.platform.store.flow import gate_state as gatestate
from weir.platform.store.records import runs as run_records
from weir.platform.store.records.runs import Run


def gate(tx: Tx, cand: Candidate) -> bool:
    option = cand.fn.config.singleton
    if option is None:
        return True
    key = gate_key(cand, GateName.SINGLETON, option.key)
    decision = singleton.decide(option.mode, holder(tx, key.hash), key.text)
    if decision.skip is None:
        return True
    record_all(
        tx, cand, EventOutcome.SINGLETON_SKIPPED, decision.holder_run_id, decision.skip.words
    )
    return False


def holder(tx: Tx, key_hash: str) -> str | None:
    """The run holding the key, if it is still active (a lock left by an ended run is free)."""
    lock = load_row(tx, GateName.SINGLETON, key_hash)
    if lock is None:
        return None
    run = run_records.get_run(tx.conn, str(lock["run_id"]))
    return None if run is None or run.ended else str(run.id)


def _key(cand: Candidate) -> EvaluatedKey | None:
    option = cand.fn.config.singleton
    return None if option is None else gate_key(cand, GateName.SINGLETON, option.key)


def with_key(cand: Candidate, plan: RunPlan) -> RunPlan:
    """Keep the key on the run, so its end knows which lock to release."""
    key = _key(cand)
    if key is None:
        return plan
    return replace(
        plan, keys={**plan.keys, GateName.SINGLETON.value: {"key": key.text, "hash": key.hash}}
    )


def take_lock(tx: Tx, cand: Candidate, run_id: str) -> None:
    key = _key(cand)
    if key is None:
        return
    current = holder(tx, key.hash)
    if current is not None and current != run_id:  # cancel mode: the newcomer replaces it
        words = f"{GateName.SINGLETON}: replaced by run {run_id}{key_text(key.text)}"
        cancel_run(tx, current, words)
    gatestate.save(tx.conn, GateName.SINGLETON, key.hash, {"run_id": run_id, "key": key.text}, None)


def release(tx: Tx, run: Run) -> None:
    """Free the run's lock when it ends (unless another run holds the key by now)."""
    key_hash = run.keys.get(GateName.SINGLETON, {}).get("hash")
    if key_hash is None:
        return
    lock = load_row(tx, GateName.SINGLETON, key_hash)
    if lock is not None and lock.get("run_id") == run.id:
        gatestate.drop(tx.conn, GateName.SINGLETON, key_hash)
