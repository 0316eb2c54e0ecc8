"""The write-ahead log is folded in by the checkpointer thread, not by the writer's commits."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import Connection, text
from weir.platform.store import database
from weir.platform.store.database import Database, make_engine
from weir.platform.store.engine.checkpoint import Checkpointed

PAGE_BYTES = 4096


@pytest.fixture
def db(tmp_path: Path) -> Database:
    database = Database(make_engine(f"sqlite:///{tmp_path / 'weir.db'}"))
    database.write_sync(lambda c: c.execute(text("CREATE TABLE t (v BLOB)")))
    yield database
    database.close()


def _insert(size: int) -> object:
    def job(conn: Connection) -> None:
        conn.execute(text("INSERT INTO t (v) VALUES (:v)"), {"v": b"x" * size})

    return job


def _wal_bytes(tmp_path: Path) -> int:
    wal = tmp_path / "weir.db-wal"
    return wal.stat().st_size if wal.exists() else 0


def test_the_writer_leaves_checkpoints_to_the_checkpointer(db: Database) -> None:
    setting = db.write_sync(
        lambda c: c.connection.driver_connection.execute("PRAGMA wal_autocheckpoint").fetchone()
    )
    assert setting == (0,)


def test_a_passive_checkpoint_folds_in_every_committed_frame(db: Database) -> None:
    assert db.checkpointer is not None
    db.checkpointer.stop()  # only the explicit pass below runs
    db.write_sync(_insert(3 * 1024 * 1024))  # ~770 pages
    done = db.checkpointer.run_once()
    assert done.busy is False
    assert done.log_frames > 3 * 1024 * 1024 // PAGE_BYTES
    assert done.checkpointed_frames == done.log_frames


def test_commits_past_the_old_autocheckpoint_size_are_not_checkpointed_by_the_commit(
    db: Database,
) -> None:
    """With SQLite's default, the commit that grows the log past 1,000 pages checkpoints and
    the next transaction starts the log over; here the log keeps growing until the
    checkpointer's pass."""
    assert db.checkpointer is not None
    db.checkpointer.stop()
    for _ in range(3):
        db.write_sync(_insert(2 * 1024 * 1024))  # 3 x ~513 pages: past 1,000 after two
    done = db.checkpointer.run_once()
    assert done.log_frames > 1_500


def test_the_thread_checkpoints_shortly_after_commits(db: Database) -> None:
    assert db.checkpointer is not None
    db.write_sync(_insert(1024 * 1024))
    deadline = time.monotonic() + 10
    last: Checkpointed | None = None
    while time.monotonic() < deadline:
        last = db.checkpointer.last
        if last is not None and last.log_frames > 256:
            break
        time.sleep(0.05)
    assert last is not None and last.log_frames > 256
    assert last.checkpointed_frames == last.log_frames


def test_data_committed_before_a_checkpoint_reads_back_after_reopening(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'weir.db'}"
    first = Database(make_engine(url))
    first.write_sync(lambda c: c.execute(text("CREATE TABLE t (v BLOB)")))
    for size in (10, 2 * 1024 * 1024, 20):
        first.write_sync(_insert(size))
    first.close()
    second = Database(make_engine(url))
    sizes = second.read_sync(lambda c: c.execute(text("SELECT length(v) FROM t")).scalars().all())
    second.close()
    assert sorted(sizes) == [10, 20, 2 * 1024 * 1024]


def test_the_log_file_is_cut_back_after_it_starts_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = 1024 * 1024  # Weir's limit is larger; the pragma works the same at any size
    monkeypatch.setattr(database, "JOURNAL_SIZE_LIMIT", limit)
    db = Database(make_engine(f"sqlite:///{tmp_path / 'weir.db'}"))
    assert db.checkpointer is not None
    db.checkpointer.stop()
    db.write_sync(lambda c: c.execute(text("CREATE TABLE t (v BLOB)")))
    db.write_sync(_insert(3 * limit))
    assert _wal_bytes(tmp_path) > 3 * limit
    assert db.checkpointer.run_once().busy is False
    db.write_sync(_insert(10))  # the first commit after a whole checkpoint starts the log over
    wal = _wal_bytes(tmp_path)
    db.close()
    assert wal <= limit
