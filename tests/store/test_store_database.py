"""Database: writer threads (one on SQLite, committing groups of jobs each under its own
savepoint; several on PostgreSQL, one job per transaction), and readers beside them."""

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import DBAPIError
from weir.platform.store.database import (
    PG_WRITERS,
    Database,
    commit_soon,
    make_engine,
    on_rollback,
)
from weir.platform.store.engine.schema import gate_state

from tests.support.backends import ONLY_SQLITE
from tests.support.store_kit import Store

# Group commit is SQLite's: on PostgreSQL every job commits alone (no cross-process lock waits
# on a whole group), so the tests of how a group behaves run on SQLite only.
GROUPED = ONLY_SQLITE
WAIT_S = 30  # generous bound on waiting for another thread; never a measured time


class JobFailed(Exception):
    pass


class Fatal(BaseException):
    """Not an Exception: escapes a job's savepoint, as KeyboardInterrupt would."""


def put(key: str) -> Callable[[Connection], str]:
    def job(conn: Connection) -> str:
        conn.execute(insert(gate_state).values(gate="t", key_hash=key, state="{}"))
        return key

    return job


def keys_in(store: Store) -> list[str]:
    return [str(r[0]) for r in store.rows("SELECT key_hash FROM gate_state ORDER BY key_hash")]


class Blocker:
    """A job that holds the writer thread until released: jobs sent meanwhile form one group."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.transactions: dict[str, object] = {}

    def job(self, conn: Connection) -> None:
        self.transactions["blocker"] = conn.get_transaction()
        self.started.set()
        assert self.release.wait(WAIT_S)

    def recording(self, name: str, job: Callable[[Connection], Any]) -> Callable[[Connection], Any]:
        def run(conn: Connection) -> Any:
            self.transactions[name] = conn.get_transaction()  # the group's outer transaction
            return job(conn)

        return run


def run_grouped(
    store: Store, blocker: Blocker, jobs: dict[str, Callable[[Connection], Any]]
) -> dict[str, Future[Any]]:
    """Hold the writer, queue `jobs` behind it, then let it take them all as one group."""
    pool = ThreadPoolExecutor(max_workers=len(jobs) + 1)
    first = pool.submit(store.write, blocker.job)
    assert blocker.started.wait(WAIT_S)
    futures = {
        name: pool.submit(store.write, blocker.recording(name, job)) for name, job in jobs.items()
    }
    _wait_until_queued(store, len(jobs))
    blocker.release.set()
    first.result(WAIT_S)
    for f in futures.values():
        f.exception(WAIT_S)
    pool.shutdown()
    return futures


def _wait_until_queued(store: Store, n: int) -> None:
    # The jobs are handed over by pool threads; give them a moment to reach the writer's queue.
    # Whether they land in one group is checked afterwards, through the recorded transactions.
    for _ in range(1000):
        if store.db._jobs.qsize() >= n:
            return
        threading.Event().wait(0.005)


@GROUPED
def test_a_failing_job_rolls_back_alone_while_its_group_commits(store: Store) -> None:
    blocker = Blocker()

    def half_then_fail(conn: Connection) -> None:
        put("b-before-failure")(conn)
        raise JobFailed("b failed after writing")

    futures = run_grouped(store, blocker, {"a": put("a"), "b": half_then_fail, "c": put("c")})
    grouped = {id(blocker.transactions[name]) for name in "abc"}
    assert len(grouped) == 1, "a, b and c should have shared one physical transaction"
    assert futures["a"].result() == "a"
    assert futures["c"].result() == "c"
    with pytest.raises(JobFailed, match="b failed after writing"):
        futures["b"].result()
    assert keys_in(store) == ["a", "c"]


@GROUPED
def test_a_job_rewriting_many_pages_of_its_group_rolls_back_alone(store: Store) -> None:
    # 200 rows of 2 KiB: 100 pages the first job changes, the second rewrites and rolls back.
    # Its savepoint's page images (400 KiB) are far past SQLite's 64 KiB statement journal
    # spill point, so this holds whether that journal lives in a file or in memory.
    def fill(state: str) -> Callable[[Connection], None]:
        def job(conn: Connection) -> None:
            rows = [{"gate": "t", "key_hash": f"k{i:03}", "state": state} for i in range(200)]
            conn.execute(insert(gate_state), rows)

        return job

    def rewrite_then_fail(conn: Connection) -> None:
        conn.execute(gate_state.update().values(state="y" * 2048))
        raise JobFailed("rewrote every page, then failed")

    blocker = Blocker()
    futures = run_grouped(store, blocker, {"a": fill("x" * 2048), "b": rewrite_then_fail})
    assert len({id(blocker.transactions[name]) for name in "ab"}) == 1
    assert isinstance(futures["b"].exception(), JobFailed)
    assert store.rows("SELECT count(*), min(state), max(state) FROM gate_state") == [
        (200, "x" * 2048, "x" * 2048)
    ]


@GROUPED
def test_the_sqlite_writer_keeps_its_temporary_files_in_memory(store: Store) -> None:
    # 2 = MEMORY: the statement journals of the jobs' savepoints are never written to disk;
    # 0 = the default (a file): a reader's large sort does not take memory
    assert store.write(lambda c: c.exec_driver_sql("PRAGMA temp_store").scalar()) == 2
    assert store.read(lambda c: c.exec_driver_sql("PRAGMA temp_store").scalar()) == 0


def test_a_job_that_breaks_a_constraint_rolls_back_alone(store: Store) -> None:
    store.write(put("taken"))
    blocker = Blocker()
    futures = run_grouped(store, blocker, {"a": put("a"), "dup": put("taken"), "c": put("c")})
    assert futures["dup"].exception() is not None
    assert futures["a"].result() == "a"
    assert futures["c"].result() == "c"
    assert keys_in(store) == ["a", "c", "taken"]


@GROUPED
def test_a_job_that_asks_to_commit_soon_ends_its_group_there(store: Store) -> None:
    blocker = Blocker()

    def charged(conn: Connection) -> str:
        put("b")(conn)
        commit_soon(conn)  # as a rate-charged start does: the jobs behind it commit later
        return "b"

    jobs = {"a": put("a"), "b": charged, "c": put("c"), "d": put("d")}
    futures = run_grouped(store, blocker, jobs)
    outer = {name: id(blocker.transactions[name]) for name in "abcd"}
    assert outer["a"] == outer["b"] != outer["c"] == outer["d"]
    assert [futures[name].result() for name in "abcd"] == ["a", "b", "c", "d"]
    assert keys_in(store) == ["a", "b", "c", "d"]


@GROUPED
def test_a_base_exception_aborts_its_whole_group_and_the_writer_goes_on(store: Store) -> None:
    blocker = Blocker()

    def fatal(conn: Connection) -> None:
        raise Fatal("stop")

    futures = run_grouped(store, blocker, {"a": put("a"), "fatal": fatal, "c": put("c")})
    for name in ("a", "fatal", "c"):  # nothing of the group holds, and every caller hears it
        assert isinstance(futures[name].exception(), Fatal)
    assert keys_in(store) == []
    assert store.write(put("after")) == "after"
    assert keys_in(store) == ["after"]


def undoing(
    name: str, undone: list[str], job: Callable[[Connection], Any]
) -> Callable[[Connection], Any]:
    """`job`, registering an undo that records `name` (as a sync does for its registry)."""

    def run(conn: Connection) -> Any:
        on_rollback(conn, lambda: undone.append(name))
        return job(conn)

    return run


@GROUPED
def test_only_a_failing_job_s_undos_run_and_its_group_s_commit_forgets_the_rest(
    store: Store,
) -> None:
    blocker, undone = Blocker(), []

    def fail(conn: Connection) -> None:
        raise JobFailed("b failed after registering its undo")

    jobs = {name: undoing(name, undone, put(name)) for name in "ac"}
    futures = run_grouped(store, blocker, {**jobs, "b": undoing("b", undone, fail)})
    assert len({id(blocker.transactions[name]) for name in "abc"}) == 1
    assert isinstance(futures["b"].exception(), JobFailed)
    assert undone == ["b"]
    with pytest.raises(JobFailed):
        store.write(undoing("later", undone, fail_with(JobFailed("later"))))
    assert undone == ["b", "later"]  # a committed job's undo never runs, not even later


@GROUPED
def test_a_group_that_does_not_commit_runs_every_undo_before_the_next_job(store: Store) -> None:
    blocker, undone = Blocker(), []

    def fatal(conn: Connection) -> None:
        raise Fatal("the group does not commit")

    jobs = {"a": undoing("a", undone, put("a")), "fatal": fatal, "c": put("c")}
    futures = run_grouped(store, blocker, jobs)
    assert isinstance(futures["a"].exception(), Fatal)
    assert store.write(lambda c: list(undone)) == ["a"]  # done before the writer went on
    assert keys_in(store) == []


def test_a_job_alone_that_fails_runs_its_undos(store: Store) -> None:
    undone: list[str] = []
    with pytest.raises(JobFailed):
        store.write(undoing("alone", undone, fail_with(JobFailed("no"))))
    assert undone == ["alone"]
    assert store.write(undoing("kept", undone, put("k"))) == "k"
    assert undone == ["alone"]


def test_a_job_s_undos_run_latest_first(store: Store) -> None:
    # Two installs in one job (or one group) put back in reverse: the older state wins.
    undone: list[str] = []

    def twice_then_fail(conn: Connection) -> None:
        on_rollback(conn, lambda: undone.append("first"))
        on_rollback(conn, lambda: undone.append("second"))
        raise JobFailed("after both")

    with pytest.raises(JobFailed):
        store.write(twice_then_fail)
    assert undone == ["second", "first"]


def fail_with(exc: Exception) -> Callable[[Connection], None]:
    def job(conn: Connection) -> None:
        raise exc

    return job


def test_write_returns_the_job_s_value_and_raises_its_error(store: Store) -> None:
    def fail(conn: Connection) -> None:
        raise JobFailed("no")

    assert store.write(lambda c: 41 + 1) == 42
    with pytest.raises(JobFailed, match="no"):
        store.write(fail)


async def test_async_writes_and_reads_go_through_the_same_store(store: Store) -> None:
    results = await asyncio.gather(*(store.db.write(put(f"k{i:02}")) for i in range(50)))
    assert results == [f"k{i:02}" for i in range(50)]
    count = await store.db.read(lambda c: len(c.execute(select(gate_state)).all()))
    assert count == 50


async def test_a_failing_async_write_raises_in_its_caller_only(store: Store) -> None:
    def fail(conn: Connection) -> None:
        put("x")(conn)
        raise JobFailed("x")

    outcomes = await asyncio.gather(
        store.db.write(put("a")),
        store.db.write(fail),
        store.db.write(put("b")),
        return_exceptions=True,
    )
    assert outcomes[0] == "a" and outcomes[2] == "b"
    assert isinstance(outcomes[1], JobFailed)
    assert keys_in(store) == ["a", "b"]


def test_readers_never_see_a_transaction_before_it_commits(store: Store) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(conn: Connection) -> None:
        put("pending")(conn)
        started.set()
        assert release.wait(WAIT_S)

    with ThreadPoolExecutor(1) as pool:
        done = pool.submit(store.write, slow)
        assert started.wait(WAIT_S)
        assert keys_in(store) == []
        assert store.read(lambda c: c.execute(select(gate_state.c.key_hash)).all()) == []
        release.set()
        done.result(WAIT_S)
    assert keys_in(store) == ["pending"]


class _LostRace(Exception):
    sqlstate = "40001"  # a serialization failure, as psycopg names it


def test_a_job_alone_that_fails_leaves_nothing_and_the_writer_goes_on(store: Store) -> None:
    def half_then_fail(conn: Connection) -> None:
        put("half")(conn)
        raise JobFailed("failed after writing")

    with pytest.raises(JobFailed):
        store.write(half_then_fail)
    assert keys_in(store) == []
    assert store.write(put("after")) == "after"
    assert keys_in(store) == ["after"]


def test_a_job_alone_that_lost_a_race_runs_again_in_a_new_transaction(store: Store) -> None:
    attempts: list[int] = []

    def racing(conn: Connection) -> str:
        attempts.append(len(attempts) + 1)
        put(f"try{len(attempts)}")(conn)
        if len(attempts) == 1:
            raise DBAPIError("UPDATE ...", {}, _LostRace())
        return "done"

    assert store.write(racing) == "done"
    assert attempts == [1, 2]
    assert keys_in(store) == ["try2"]  # the first attempt's write was rolled back


def test_a_base_exception_in_a_job_alone_reaches_its_caller_and_the_writer_goes_on(
    store: Store,
) -> None:
    def fatal(conn: Connection) -> None:
        put("fatal")(conn)
        raise Fatal("stop")

    with pytest.raises(Fatal):
        store.write(fatal)
    assert keys_in(store) == []
    assert store.write(put("after")) == "after"


# -- writers -----------------------------------------------------------------------------------


@GROUPED
async def test_on_sqlite_one_writer_takes_the_jobs_in_the_order_they_came(store: Store) -> None:
    order: list[str] = []

    def job(name: str) -> Callable[[Connection], str]:
        def run(conn: Connection) -> str:
            order.append(name)
            return put(name)(conn)

        return run

    names = [f"k{i:02}" for i in range(20)]
    assert await asyncio.gather(*(store.db.write(job(n)) for n in names)) == names
    assert order == names
    assert len(store.db.writers) == 1


def test_close_stops_every_writer(database_url: str) -> None:
    db = Database(make_engine(database_url))
    writers = list(db.writers)
    assert all(w.is_alive() for w in writers)
    assert len(writers) == (1 if database_url.startswith("sqlite") else PG_WRITERS)
    db.close()
    assert not any(w.is_alive() for w in writers)


@GROUPED
async def test_a_coroutine_cancelled_before_its_job_runs_gives_the_job_up(store: Store) -> None:
    blocker = Blocker()
    held = asyncio.ensure_future(store.db.write(blocker.job))
    assert await asyncio.to_thread(blocker.started.wait, WAIT_S)
    given_up = asyncio.ensure_future(store.db.write(put("never")))
    kept = asyncio.ensure_future(store.db.write(put("kept")))
    await asyncio.sleep(0)  # both jobs are queued behind the blocker
    given_up.cancel()
    blocker.release.set()
    assert await kept == "kept"
    await held
    assert given_up.cancelled()
    assert keys_in(store) == ["kept"]


async def test_a_coroutine_cancelled_while_its_job_runs_still_commits_it(store: Store) -> None:
    blocker = Blocker()

    def job(conn: Connection) -> str:
        blocker.job(conn)
        return put("ran")(conn)

    task = asyncio.ensure_future(store.db.write(job))
    assert await asyncio.to_thread(blocker.started.wait, WAIT_S)
    task.cancel()  # the job is running: it cannot be taken back, so it commits
    blocker.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await store.db.write(put("after")) == "after"  # the writer went on
    assert keys_in(store) == ["after", "ran"]


async def grouped_outcomes(store: Store, jobs: list[Callable[[Connection], Any]]) -> list[Any]:
    """Hold the writer, queue `jobs` behind it from coroutines, then let it take them all as
    one group; each coroutine's value or error, in order."""
    blocker = Blocker()
    held = asyncio.ensure_future(store.db.write(blocker.job))
    assert await asyncio.to_thread(blocker.started.wait, WAIT_S)
    waiting = asyncio.gather(*(store.db.write(job) for job in jobs), return_exceptions=True)
    await asyncio.to_thread(_wait_until_queued, store, len(jobs))
    blocker.release.set()
    await held
    return list(await asyncio.wait_for(waiting, WAIT_S))


@GROUPED
async def test_a_fatal_error_in_a_group_reaches_every_coroutine_of_the_group(store: Store) -> None:
    def fatal(conn: Connection) -> None:
        raise Fatal("stop")

    outcomes = await grouped_outcomes(store, [put("a"), fatal, put("b")])
    assert [type(o) for o in outcomes] == [Fatal, Fatal, Fatal]  # none of them committed
    assert keys_in(store) == []
    assert await store.db.write(put("after")) == "after"


@GROUPED
async def test_a_job_raising_stop_iteration_leaves_no_coroutine_of_its_group_waiting(
    store: Store,
) -> None:
    # A future refuses a StopIteration: handed over as it is, it stopped the answers to the
    # jobs after it in the group.
    def stops(conn: Connection) -> None:
        raise StopIteration("a generator's end, leaked")

    first, stopped, last = await grouped_outcomes(store, [put("a"), stops, put("b")])
    assert (first, last) == ("a", "b")
    assert isinstance(stopped, RuntimeError) and isinstance(stopped.__cause__, StopIteration)
    assert keys_in(store) == ["a", "b"]
