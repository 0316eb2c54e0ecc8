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
from dataclasses import dataclass

from sqlalchemy import Connection
from weir.platform.store import step_records
from weir.platform.store.run_records import Run
from weir.platform.store.step_records import Step

RUNS_KEPT = 256  # about the calls in flight at once, and their runs' next calls
STATE_BYTES_KEPT = 16 * 1024  # a run that stores more is read whole at each call


@dataclass(frozen=True)
class Known:
    count: int  # the run's step count when its memos were read: those numbered below it
    memos: tuple[Step, ...]


class MemoCache:
    """Memos of recently called runs, by run id. Written by the event loop once a call's state
    is in hand (read in a committed transaction); read by writer threads (one lookup)."""

    def __init__(self, runs: int = RUNS_KEPT, state_bytes: int = STATE_BYTES_KEPT) -> None:
        self.runs, self.state_bytes = runs, state_bytes
        self._known: dict[str, Known] = {}
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
        or stores much."""
        if run.ended or run.state_bytes > self.state_bytes:
            self.forget([run.id])
            return
        known = Known(run.step_count, tuple(m for m in memos if m.seq < run.step_count))
        with self._lock:
            self._known.pop(run.id, None)  # to the end: the least recently called goes first
            self._known[run.id] = known
            while len(self._known) > self.runs:
                del self._known[next(iter(self._known))]

    def forget(self, run_ids: Iterable[str]) -> None:
        with self._lock:
            for run_id in run_ids:
                self._known.pop(run_id, None)
