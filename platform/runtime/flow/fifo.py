"""FIFO lanes around a run's life (the `lane` option, docs/semantics.md#lanes).

A new run joins its lane: it holds the lane at once, or it is queued behind the holder with no
queue item at all (so the claimer never sees it) and says so in its `waiting`. When a run ends,
it leaves its lane in the same transaction, and the next run in line gets the lane, a new fence
and its first call.

A holder that ends while a call of it is still in flight (cancelled mid-step, or failed while a
parallel step runs) hands the lane on only once that call is over, so two runs of a lane never
execute at once: a timer looks again when the call's lease ends.
"""

from dataclasses import replace
from typing import Any

from weir.expressions import key_hash
from weir.platform.foundation.vocabulary import GateName, QueueKind
from weir.platform.functions import Lane
from weir.platform.gates import fifo_lane
from weir.platform.gates.decisions import to_json
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.keys import EvaluatedKey, evaluate_key
from weir.platform.runtime.runs import RunPlan, enqueue_call, enqueue_timer
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.flow import fifo_lanes as fifo
from weir.platform.store.queue import partitions
from weir.platform.store.records import runs as run_records
from weir.platform.store.records.runs import Run
from weir.platform.store.views import fifo_lanes as lane_reads

TIMER = QueueKind.LANE_HANDOFF
LANE = fifo.LANE_KEY  # where a run's keys name its lane


def lane_key(cand: Candidate, option: Lane) -> EvaluatedKey:
    """The candidate's lane. A named lane is shared by every function naming it, by key value
    alone (their key expressions may be written differently)."""
    key = evaluate_key(f"{GateName.LANE}\x00{cand.fn.id}", option.key, cand.event)
    note = None if key.warning is None else f"{GateName.LANE}: {key.warning}"
    if note is not None and note not in cand.warnings:
        cand.warnings.append(note)
    if option.name is None:
        return key
    shared = key_hash(f"{GateName.LANE}\x00name\x00{option.name}\x00{key.text}")
    return replace(key, hash=shared)


def lane_id(fn_id: str, option: Lane, text: str) -> str:
    """The id of the lane whose key reads `text` (as lanes show it; up to 512 characters), as
    `lane_key` gives it to runs: how an operator finds a lane by its key (the lane view)."""
    if option.name is not None:
        return key_hash(f"{GateName.LANE}\x00name\x00{option.name}\x00{text}")
    namespace = f"{GateName.LANE}\x00{fn_id}"
    if option.key is None:
        return key_hash(namespace)
    return key_hash(f"{namespace}\x00{option.key}\x00{text}")


def place(tx: Tx, cand: Candidate, plan: RunPlan) -> RunPlan:
    """Join the run's lane: it holds the lane, or it is held until the lane reaches it."""
    option = cand.fn.config.lane
    if option is None or plan.run_id is None:
        return plan
    key = lane_key(cand, option)
    scope = lane_reads.scope_of(cand.fn.id, option.name)
    joined = fifo.join(
        tx.conn,
        key.hash,
        key.text,
        plan.run_id,
        plan.start_at,
        plan.start_payload,
        scope=scope,
        now=tx.now,
    )
    lane = {"key": key.text, "hash": key.hash}
    if joined.holds:
        return replace(plan, keys={**plan.keys, LANE: {**lane, "fence": joined.fence}})
    keys = {**plan.keys, LANE: lane}
    why = to_json(fifo_lane.wait_reason(key.text, joined.holder))
    return replace(plan, keys=keys, held=True, waiting=why)


def leave(tx: Tx, run: Run) -> None:
    """An ended run leaves its lane; the next run in line gets it (once no call of the ended
    holder is in flight any more)."""
    lane = run.keys.get(LANE)
    if not isinstance(lane, dict):
        return
    lane_hash = str(lane["hash"])
    if run.id in tx.calls_in_flight:  # read as the run ended, in this transaction
        leased = tx.calls_in_flight.pop(run.id)
    else:  # the lane's timer, after a call that was in flight
        leased = fifo.in_flight_until(tx.conn, run.id)
    if leased is not None and fifo.holder(tx.conn, lane_hash) == run.id:
        _arm(tx, run, leased)
        return
    handoff = fifo.leave(tx.conn, lane_hash, run.id, tx.now)
    while handoff is not None:
        nxt = run_records.lane_handed(tx.conn, handoff.run_id, handoff.fence)
        if nxt is not None:
            start_at = max(handoff.start_at, tx.now)
            if _hands_over(tx, run, nxt, start_at, handoff.payload):
                tx.next_call.run_id = nxt.id
            enqueue_call(
                tx,
                nxt.id,
                nxt.function_id,
                nxt.lane,
                nxt.limits,
                start_at,
                nxt.score,
                payload=handoff.payload,
            )
            if tx.next_call.claimed is not None and tx.next_call.claimed.run_id == nxt.id:
                tx.next_call.run = nxt  # its first call's state need not read the run again
            return
        handoff = fifo.leave(tx.conn, lane_hash, handoff.run_id, tx.now)  # gone: skip it


def _hands_over(tx: Tx, ended: Run, nxt: Run, start_at: int, payload: dict[str, Any]) -> bool:
    """Whether the worker that ended the lane's holder makes the next holder's first call,
    leased in this commit with no claim in between: only if it takes a next item at all, the
    call could be leased so (due now, no slot or start check to take: `runs._continues`), and
    no due work would be claimed before it (older or as old)."""
    return (
        tx.next_call.takes_next
        and tx.next_call.run_id == ended.id
        and tx.next_call.claimed is None
        and start_at <= tx.now
        and not nxt.limits
        and not payload
        and not partitions.due_before(tx.conn, tx.now, nxt.score)
    )


def _arm(tx: Tx, run: Run, at: int) -> None:
    dedupe = f"lane:{run.id}:{at}"
    enqueue_timer(tx, TIMER, at, {}, run_id=run.id, function_id=run.function_id, dedupe=dedupe)


def on_timer(tx: Tx, item: q.Claimed) -> None:
    run = run_records.get_run(tx.conn, item.run_id or "")
    if run is not None and run.ended:
        leave(tx, run)
