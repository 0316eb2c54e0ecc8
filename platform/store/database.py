"""Connections and transactions: writer threads (one with group commit on SQLite), pooled readers.

Every state change is a plain function over a SQLAlchemy `Connection`, run whole inside a
transaction. SQLite allows one writer at a time and each commit costs an fsync, so writes go
to a single thread that takes every job waiting, runs each under its own SAVEPOINT (a failing
job rolls back alone) and commits them together: one fsync acknowledges many transitions. A
job found alone runs in a transaction of its own, without the savepoint.

PostgreSQL (psycopg 3) takes the same path, one job per transaction (on PG_WRITERS threads per
process): several processes each run their own writer, and a job that lost a race to another
writer (deadlock, serialization failure, a duplicate first insert) is rolled back and run again
afresh.
"""

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from weir.platform.store.engine.checkpoint import JOURNAL_SIZE_LIMIT, Checkpointer
from weir.platform.store.engine.replies import LoopReply, Outcome, Reply, ThreadReply, deliver

T = TypeVar("T")
Job = Callable[[Connection], T]
log = logging.getLogger("weir.store")

MAX_GROUP = 256  # jobs per physical commit (SQLite)
# On PostgreSQL a group would hold every job's row and advisory locks until the last job is
# done, and other processes' writers wait on them (or deadlock): each job commits on its own.
PG_GROUP = 1
# Writer threads per process on PostgreSQL. Four overlapped the waits for the server's answers
# (1.8x the runs/s of one process), but contend for each meter's lock: a 100/s meter under
# bursts then peaked at 88 starts in a second. (The ledger gap once blamed on them was the
# audit's: a watcher polling rolling_log missed authorizations a slow claim committed late.)
PG_WRITERS = 1
WRITER = "weir_writer"
COMMIT_SOON = "weir_commit_soon"  # conn.info: a job whose commit must not wait for other jobs


def commit_soon(conn: Connection) -> None:
    """This job's transaction is to commit as soon as it ends, not after the rest of its group
    of jobs: what it decided is dated now and takes effect only at the commit (a rate-charged
    start)."""
    conn.info[COMMIT_SOON] = True


UNDO = "weir_undo"  # conn.info: what to undo outside the store if the job's writes do not commit


def on_rollback(conn: Connection, undo: Callable[[], None]) -> None:
    """Call `undo` (on the writer thread, before any other job runs) if what the current job
    wrote does not commit: the job failed, or its group's commit did. For state kept outside
    the store that a job changes with its writes (the registry a sync installs)."""
    conn.info.setdefault(UNDO, []).append(undo)


def _undo(conn: Connection, keep: int = 0) -> None:
    """Run the undos registered after the first `keep`, the latest first, and forget them."""
    undos: list[Callable[[], None]] = conn.info.get(UNDO, [])
    while len(undos) > keep:
        try:
            undos.pop()()
        except Exception:
            log.exception("undoing a job's effect outside the store failed")


RETRIES = 5  # runs of a job that keeps losing races to other processes
JOB_SAVEPOINT = "weir_job"  # each job of a group runs under it, so a failing job rolls back alone
# SQLSTATEs of a lost race: serialization failure, deadlock detected, unique violation.
TRANSIENT = frozenset({"40001", "40P01", "23505"})


@dataclass(frozen=True, eq=False)
class _Pending:
    job: Callable[[Connection], Any]
    reply: Reply


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def database_url(url: str) -> str:
    """`postgresql://` and `postgres://` name the psycopg 3 driver (SQLAlchemy would pick
    psycopg2, which Weir does not install)."""
    for plain in ("postgresql://", "postgres://"):
        if url.startswith(plain):
            return "postgresql+psycopg://" + url[len(plain) :]
    return url


def libpq_conninfo(url: str) -> str:
    """The URL as psycopg itself takes it (for the LISTEN connection, outside the pool)."""
    parsed = make_url(database_url(url)).set(drivername="postgresql")
    return parsed.render_as_string(hide_password=False)


def make_engine(url: str, *, synchronous: str = "FULL") -> Engine:
    url = database_url(url)
    if not is_sqlite(url):
        return create_engine(url, pool_size=8, max_overflow=8, pool_pre_ping=True)
    engine = create_engine(url, pool_size=8, max_overflow=8)
    _configure_sqlite(engine, synchronous)
    return engine


def _configure_sqlite(engine: Engine, synchronous: str) -> None:
    # pysqlite's own transaction handling hides BEGIN/SAVEPOINT; take control of both.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous}")
        cursor.execute("PRAGMA busy_timeout=10000")
        cursor.execute("PRAGMA foreign_keys=OFF")
        cursor.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # The writer takes the write lock up front; readers take a snapshot only. Sent on the
        # driver's connection: through `exec_driver_sql` it cost more than most statements.
        driver = conn.connection.driver_connection
        driver.execute("BEGIN IMMEDIATE" if conn.info.get(WRITER) else "BEGIN")  # type: ignore[union-attr]


class Database:
    """Runs jobs: writes on the writer thread (grouped), reads on worker threads."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        sqlite = engine.dialect.name == "sqlite"
        self._max_group = MAX_GROUP if sqlite else PG_GROUP
        # SQLite: the log is folded into the file by a thread of its own
        # (store/engine/checkpoint.py)
        self.checkpointer = Checkpointer(engine) if sqlite else None
        self._jobs: queue.SimpleQueue[_Pending | None] = queue.SimpleQueue()
        count = 1 if sqlite else PG_WRITERS
        self.writers = [
            threading.Thread(target=self._write_loop, name=f"weir-writer-{i}", daemon=True)
            for i in range(count)
        ]
        for writer in self.writers:
            writer.start()

    async def write(self, job: Job[T]) -> T:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[T] = loop.create_future()
        self._jobs.put(_Pending(job, LoopReply(loop, waiter)))
        return await waiter

    def write_sync(self, job: Job[T]) -> T:
        reply = ThreadReply()
        self._jobs.put(_Pending(job, reply))
        result: T = reply.future.result()
        return result

    async def read(self, job: Job[T]) -> T:
        return await asyncio.to_thread(self.read_sync, job)

    def read_sync(self, job: Job[T]) -> T:
        with self.engine.connect() as conn:
            return job(conn)

    def close(self) -> None:
        for _ in self.writers:
            self._jobs.put(None)  # one each: a writer stops at the first it takes
        for writer in self.writers:
            writer.join(timeout=10)
        if self.checkpointer is not None:
            self.checkpointer.stop()
        self.engine.dispose()

    def _write_loop(self) -> None:
        conn = self.engine.connect()
        try:
            while (group := self._take_group()) is not None:
                if not conn.info.get(WRITER):  # a new driver connection (one was replaced)
                    self._make_writer(conn)
                self._run_group(conn, group)
                if self.checkpointer is not None:
                    self.checkpointer.committed()
        finally:
            conn.close()

    def _make_writer(self, conn: Connection) -> None:
        """Set up the writer's connection. Its `info` is the driver connection's: a
        connection SQLAlchemy replaced (after an invalidating error) comes back without
        the flag, and is set up again."""
        conn.info[WRITER] = True
        if self.checkpointer is None:
            return
        # on the driver's connection: through SQLAlchemy it would begin a transaction
        driver = conn.connection.driver_connection
        driver.execute("PRAGMA wal_autocheckpoint=0")  # type: ignore[union-attr]
        # Each job of a group runs under a savepoint, so SQLite keeps the page images it would
        # roll back to in a statement journal, spilled to a temporary file past 64 KiB: about
        # 20 page writes (system calls) a run. Kept in memory, each is a copy. Only here: a
        # reader's large sort keeps its temporary b-tree on disk.
        driver.execute("PRAGMA temp_store=MEMORY")  # type: ignore[union-attr]

    def _take_group(self) -> list[_Pending] | None:
        first = self._jobs.get()
        if first is None:
            return None
        group = [first]
        while len(group) < self._max_group:
            try:
                nxt = self._jobs.get_nowait()
            except queue.Empty:
                break
            if nxt is None:
                self._jobs.put(None)  # finish this group, then stop
                break
            group.append(nxt)
        return group

    def _run_group(self, conn: Connection, group: list[_Pending]) -> None:
        if len(group) == 1:
            self._run_alone(conn, group[0])
            return
        results: list[Outcome] = []
        ran = group
        try:
            with conn.begin():
                for i, pending in enumerate(group):
                    # A caller cancelled before its job ran (a task stopped at shutdown) gave
                    # it up: skip it. Once running, it can no longer be cancelled.
                    if pending.reply.start():
                        results.append(self._run_one(conn, pending))
                        if conn.info.pop(COMMIT_SOON, False):
                            ran = group[: i + 1]
                            break
        except BaseException as exc:  # the commit itself failed: nothing of the group holds
            log.exception("group commit failed")
            _undo(conn)
            results = [(pending.reply, None, exc) for pending in ran]  # every caller still waiting
        else:
            conn.info.pop(UNDO, None)  # committed: nothing to undo
        deliver(results)
        if len(ran) < len(group):  # a job asked for its commit: the rest follow in their own
            self._run_group(conn, group[len(ran) :])

    @staticmethod
    def _run_alone(conn: Connection, pending: _Pending) -> None:
        """A group of one job: the transaction is the job's own, so it needs no savepoint (two
        statements fewer): a failing job rolls the transaction back, as its savepoint would,
        and a job that lost a race runs again in a new one (a race lost at the commit too)."""
        if not pending.reply.start():
            return
        for attempt in range(1, RETRIES + 1):
            try:
                with conn.begin():
                    value = pending.job(conn)
                    conn.info.pop(COMMIT_SOON, None)  # its commit is next anyway
            except BaseException as exc:  # rolled back; a BaseException, too, ends only this job
                conn.info.pop(COMMIT_SOON, None)
                _undo(conn)
                if isinstance(exc, DBAPIError) and attempt < RETRIES and lost_race(exc):
                    log.info("job lost a race (%s), running it again", sqlstate(exc))
                    continue
                if not isinstance(exc, Exception):
                    log.exception("group commit failed")
                deliver([(pending.reply, None, exc)])
                return
            conn.info.pop(UNDO, None)  # committed: nothing to undo
            deliver([(pending.reply, value, None)])
            return

    @staticmethod
    def _run_one(conn: Connection, pending: _Pending) -> Outcome:
        # The job's savepoint is set on the driver's cursor: through SQLAlchemy (begin_nested)
        # setting and releasing it cost more Python than most jobs' own statements.
        cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
        kept = len(conn.info.get(UNDO, ()))  # the undos of the group's jobs before this one
        for attempt in range(1, RETRIES + 1):
            cursor.execute(f"SAVEPOINT {JOB_SAVEPOINT}")
            try:
                value = pending.job(conn)
            except BaseException as exc:  # this job alone rolls back
                cursor.execute(f"ROLLBACK TO SAVEPOINT {JOB_SAVEPOINT}")
                cursor.execute(f"RELEASE SAVEPOINT {JOB_SAVEPOINT}")
                _undo(conn, kept)
                if not isinstance(exc, Exception):
                    raise
                if isinstance(exc, DBAPIError) and attempt < RETRIES and lost_race(exc):
                    log.info("job lost a race (%s), running it again", sqlstate(exc))
                    continue
                return pending.reply, None, exc
            cursor.execute(f"RELEASE SAVEPOINT {JOB_SAVEPOINT}")
            return pending.reply, value, None
        raise AssertionError("unreachable")


def sqlstate(exc: DBAPIError) -> str | None:
    return getattr(exc.orig, "sqlstate", None)  # psycopg errors carry it; sqlite3's do not


def lost_race(exc: DBAPIError) -> bool:
    """An error another process caused by touching the same rows at the same time."""
    return sqlstate(exc) in TRANSIENT
