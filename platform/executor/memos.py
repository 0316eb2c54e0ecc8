"""The memos of runs between their calls: a run's next call reads only the steps saved since
its last one, not every memo again.

A stored memo never changes (a step's result is written once; only retention deletes it, after
the run ended), and each new one is numbered above every earlier one (`save_memos` numbers from
the run's step count, under the run's lock). So the memos read with a run whose step count was
N are every memo numbered below N, for good, wherever the run is called next: here, or after
another process saved more.
"""

import threading
from collections.abc import Iterable, Sequence

from sqlalchemy import Connection
from weir.platform.foundation.record_type import record
from weir.platform.store.records import steps as step_records
from weir.platform.store.records.runs import Run
from weir.platform.store.records.steps import Step

RUNS_KEPT = 256  # about the calls in flight at once, and their runs' next calls
STATE_BYTES_KEPT = 16 * 1024  # a run that stores more is read whole at each call
# The memos' stored size kept in all. Decoded, they take several times that (a memo of many
# tiny JSON values, over thirty times): the bound is on what the store says, not measured.
TOTAL_BYTES_KEPT = 1024 * 1024


@record
class Known:
    count: int  # the run's step count when its memos were read: those numbered below it
    memos: tuple[Step, ...]
    size: int  # the run's stored state then, in bytes


class MemoCache:
    """Memos of recently called runs, by run id. Written by the event loop once a call's state
    is in hand (read in a committed transaction); read by writer threads (one lookup)."""

    def __init__(
        self,
        runs: int = RUNS_KEPT,
        state_bytes: int = STATE_BYTES_KEPT,
        total_bytes: int = TOTAL_BYTES_KEPT,
    ) -> None:
        self.runs, self.state_bytes, self.total_bytes = runs, state_bytes, total_bytes
        self._known: dict[str, Known] = {}
        self._bytes = 0  # the sizes of what `_known` holds
        self._lock = threading.Lock()

    def memos(self, conn: Connection, run: Run) -> list[Step]:
        """The run's memos in completion order, reading only those numbered past what is kept
        (everything when nothing is, or what is kept is newer than `run` as read)."""
        if not run.step_count:
            return []
        known = self._known.get(run.id)
        if known is None or known.count > run.step_count:
            return step_records.list_steps(conn, run.id)
        if known.count == run.step_count:
            return list(known.memos)
        return [*known.memos, *step_records.list_steps(conn, run.id, since=known.count)]

    def keep(self, run: Run, memos: Sequence[Step]) -> None:
        """The memos read with `run` (committed): kept for its next call, unless it has ended
        or stores much. (A run that ended meanwhile, e.g. by a parallel call's answer, may be
        kept again after `forget`: its entry is only pushed out in time.)"""
        if not run.step_count:
            return  # nothing to keep: its next call reads every memo, as it would
        if run.ended or run.state_bytes > self.state_bytes:
            self.forget([run.id])
            return
        kept = tuple(m for m in memos if m.seq < run.step_count)
        known = Known(run.step_count, kept, run.state_bytes)
        with self._lock:
            self._drop(run.id)  # then put at the end: the least recently called goes first
            self._known[run.id] = known
            self._bytes += known.size
            while len(self._known) > self.runs or self._bytes > self.total_bytes:
                self._drop(next(iter(self._known)))

    def forget(self, run_ids: Iterable[str]) -> None:
        with self._lock:
            for run_id in run_ids:
                self._drop(run_id)

    def _drop(self, run_id: str) -> None:
        """Under `_lock`."""
        gone = self._known.pop(run_id, None)
        if gone is not None:
            self._bytes -= gone.size
