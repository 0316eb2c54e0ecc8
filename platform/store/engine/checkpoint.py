"""Folding SQLite's write-ahead log into the database file off the writer's path.

By default SQLite checkpoints inside the commit that grows the log past 1,000 pages: that
commit copies every page back into the database file and fsyncs it, so one transition in
a few hundred (and every other commit of a large event) waited 10-25 ms for work that is
not its own. Weir's writer connection turns that off (`wal_autocheckpoint=0`) and this
thread checkpoints instead, shortly after commits, in PASSIVE mode: it never takes the
write lock, so the writer goes on committing meanwhile. Durability does not change: a
commit is durable once its log frames are fsynced, before and after a checkpoint.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from sqlalchemy import Engine

log = logging.getLogger("weir.store")

# Commits within this long share one checkpoint: at a few pages per transition, one pass
# folds in hundreds of them, and a large event's pages a moment after its commit.
DELAY_S = 0.2
# A log file grown by a burst is cut back to this size once it starts over.
JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024


@dataclass(frozen=True)
class Checkpointed:
    """One PASSIVE checkpoint: the log's frames, and how many are now in the database file
    (fewer when a reader still needs older pages; the next pass folds in the rest)."""

    busy: bool
    log_frames: int
    checkpointed_frames: int


class Checkpointer:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.last: Checkpointed | None = None
        self._wake = threading.Condition()
        self._pending = False
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="weir-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """Called by the writer after a commit: a checkpoint follows shortly."""
        if self._pending:
            # A pass is due and folds in this commit's frames too; notifying again would wake
            # the thread (waiting out DELAY_S) for nothing, on every commit.
            return
        with self._wake:
            self._pending = True
            self._wake.notify()

    def run_once(self) -> Checkpointed:
        # On the driver's connection: SQLAlchemy would begin a transaction, inside which
        # SQLite refuses to checkpoint.
        raw = self.engine.raw_connection()
        try:
            row = raw.driver_connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()  # type: ignore[union-attr]
        finally:
            raw.close()
        self.last = Checkpointed(bool(row[0]), int(row[1]), int(row[2]))
        return self.last

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while self._next_pass():
            try:
                self.run_once()
            except Exception:  # e.g. the file went away at shutdown: the next commit retries
                log.exception("checkpoint of the write-ahead log failed")

    def _next_pass(self) -> bool:
        """Waits for a commit, then a moment more (commits meanwhile share the pass); False
        once stopping."""
        with self._wake:
            self._wake.wait_for(lambda: self._pending or self._stopping)
            self._wake.wait_for(lambda: self._stopping, DELAY_S)
            self._pending = False
            return not self._stopping
