"""Run timeouts as timer items: `start` (creation -> first step) and `finish` (first step ->
end). At its deadline a timer cancels the run through `runs.cancel_run`, which never interrupts
a step in flight: the run just goes no further.

The finish deadline is only known once the run has started, so its timer is first set at the
earliest it could be (creation + finish) and re-arms itself until the run's start is known.
"""

from weir.platform.foundation.vocabulary import QueueKind
from weir.platform.gates import timeouts
from weir.platform.runtime.flow.candidate import Candidate
from weir.platform.runtime.runs import cancel_run, enqueue_timer
from weir.platform.runtime.tx import Tx
from weir.platform.store import queue as q
from weir.platform.store.records import runs as run_records
from weir.platform.store.records.runs import Run

TIMER = QueueKind.RUN_TIMEOUT
START = "start"
FINISH = "finish"


def arm(tx: Tx, cand: Candidate, run_id: str) -> None:
    option = cand.fn.config.timeouts
    if option is None:
        return
    if option.start_ms is not None:
        _set(tx, run_id, cand.fn.id, START, tx.now + option.start_ms)
    if option.finish_ms is not None:
        _set(tx, run_id, cand.fn.id, FINISH, tx.now + option.finish_ms)


def _set(tx: Tx, run_id: str, fn_id: str, which: str, at: int) -> None:
    dedupe = f"timeout:{which}:{run_id}"
    enqueue_timer(tx, TIMER, at, {"which": which}, run_id=run_id, function_id=fn_id, dedupe=dedupe)


def on_timer(tx: Tx, item: q.Claimed) -> None:
    run = run_records.get_run(tx.conn, item.run_id or "")
    fn = None if run is None else tx.registry.by_id.get(run.function_id)
    if run is None or run.ended or fn is None or fn.config.timeouts is None:
        return
    config = fn.config.timeouts
    if item.payload.get("which") == START:
        _check_start(tx, run, config)
    else:
        _check_finish(tx, run, config)


def _check_start(tx: Tx, run: Run, config: timeouts.TimeoutConfig) -> None:
    if run.started_at is not None:
        return  # its first step began in time; only `finish` applies now
    leased = q.in_flight_until(tx.conn, run.id)
    if leased is not None:  # the first call is under way: look again when its lease ends
        _set(tx, run.id, run.function_id, START, leased)
        return
    _cancel_or_rearm(tx, run, START, timeouts.check(config, run.created_at, None, tx.now))


def _check_finish(tx: Tx, run: Run, config: timeouts.TimeoutConfig) -> None:
    if run.started_at is None:
        # In flight: its start is known once the call ends. Idle: it cannot end before now +
        # finish, since it has not started yet.
        leased = q.in_flight_until(tx.conn, run.id)
        _set(tx, run.id, run.function_id, FINISH, leased or tx.now + (config.finish_ms or 0))
        return
    decision = timeouts.check(config, run.created_at, run.started_at, tx.now)
    _cancel_or_rearm(tx, run, FINISH, decision)


def _cancel_or_rearm(tx: Tx, run: Run, which: str, decision: timeouts.TimeoutDecision) -> None:
    if decision.cancel:
        cancel_run(tx, run.id, decision.words)
    elif decision.deadline_ms is not None:  # ran early (a clock step): wait for the deadline
        _set(tx, run.id, run.function_id, which, decision.deadline_ms)
