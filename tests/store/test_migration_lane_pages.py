"""Migrations 0012 to 0016 on a store with work in it: lanes learn their function from their
items, and the tables rebuilt or re-indexed for fewer pages per commit keep every row and every
rule (a dedupe is still unique; items without one never conflict)."""

from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import alembic_config

ROWS = [
    "INSERT INTO queue (id, kind, function_id, available_at, score, lane, dedupe, created_at)"
    " VALUES (1, 'exec', 'fn-a', 0, 0, 'lane-a', NULL, 0),"
    " (2, 'exec', 'fn-b', 0, 0, 'Lkey', 'd1', 0),"
    " (3, 'sleep', 'fn-a', 5, 5, '~timers', NULL, 0),"
    " (4, 'exec', 'fn-a', 0, 1, 'lane-a', NULL, 0)",
    "INSERT INTO lanes (lane, next_at, head_score, blocked_on, limits) VALUES"
    " ('lane-a', 0, 0, NULL, '[]'), ('Lkey', 9, 0, 'k1', '[[\"k1\", 1]]'),"
    " ('~timers', 5, 5, NULL, '[]'), ('empty', 0, 0, NULL, '[]')",
    "INSERT INTO slots (key_hash, item_id, expires_at) VALUES ('k1', 2, 100)",
    "INSERT INTO fences (scope, value) VALUES ('k1', 7)",
    "INSERT INTO event_runs (event_id, run_id) VALUES ('e1', 'r1')",
    "INSERT INTO run_keys (function_id, key, run_id, expires_at)"
    " VALUES ('fn-a', 'event:e1', 'r1', 9)",
    "INSERT INTO fifo_lanes (lane, key, holder, fence, next_seq, scope, held_since, queued)"
    " VALUES ('f1', 'one', 'r1', 3, 4, 'fn:fn-a', 7, 2)",
    "INSERT INTO fifo_members (lane, seq, run_id, start_at, payload)"
    " VALUES ('f1', 2, 'r2', 8, '{}'), ('f1', 3, 'r3', 9, '{\"a\": 1}')",
]


def migrate_to(engine: Engine, revision: str) -> None:
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def rows(engine: Engine, sql: str) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(sql))]


def test_work_in_the_store_survives_and_lanes_learn_their_function(engine: Engine) -> None:
    migrate_to(engine, "0011")
    with engine.begin() as conn:
        for sql in ROWS:
            conn.execute(text(sql))
    migrate_to(engine, "0017")  # 0018 takes idle FIFO lanes away: test_migration_busy_lanes
    assert rows(engine, "SELECT lane, function_id, blocked_on FROM lanes ORDER BY lane") == [
        ("Lkey", "fn-b", "k1"),
        ("lane-a", "fn-a", None),
        ("~timers", None, None),  # items of every function: none of its own
    ]  # the lane with no items is gone, as a claim would have deleted it
    assert rows(engine, "SELECT key_hash, item_id, expires_at FROM slots") == [("k1", 2, 100)]
    assert rows(engine, "SELECT scope, value FROM fences") == [("k1", 7)]
    assert rows(engine, "SELECT event_id, run_id FROM event_runs") == [("e1", "r1")]
    assert rows(engine, "SELECT function_id, key, run_id, expires_at FROM run_keys") == [
        ("fn-a", "event:e1", "r1", 9)
    ]
    assert rows(
        engine,
        "SELECT lane, key, holder, fence, next_seq, scope, held_since, queued FROM fifo_lanes",
    ) == [("f1", "one", "r1", 3, 4, "fn:fn-a", 7, 2)]
    assert rows(engine, "SELECT lane, seq, run_id, start_at, payload FROM fifo_members") == [
        ("f1", 2, "r2", 8, "{}"),
        ("f1", 3, "r3", 9, '{"a": 1}'),
    ]
    assert rows(engine, "SELECT id, dedupe FROM queue ORDER BY id") == [
        (1, None),
        (2, "d1"),
        (3, None),
        (4, None),
    ]


def test_fifo_members_keep_their_rows_down_to_0015_and_up_again(engine: Engine) -> None:
    migrate_to(engine, "head")
    line = [("f1", 2, "r2", 8, "{}"), ("f1", 3, "r3", 9, '{"a": 1}')]
    with engine.begin() as conn:
        conn.execute(text(ROWS[-1]))  # the members' insert
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0015")
    assert rows(engine, "SELECT lane, seq, run_id, start_at, payload FROM fifo_members") == line
    migrate_to(engine, "head")
    assert rows(engine, "SELECT lane, seq, run_id, start_at, payload FROM fifo_members") == line
    assert rows(engine, "SELECT run_id FROM fifo_members WHERE run_id = 'r3'") == [("r3",)]


def test_a_dedupe_stays_unique_and_items_without_one_never_conflict(engine: Engine) -> None:
    migrate_to(engine, "head")
    insert = (
        "INSERT INTO queue (kind, available_at, score, lane, dedupe, created_at)"
        " VALUES ('exec', 0, 0, 'l', {}, 0)"
    )
    with engine.begin() as conn:
        for _ in range(3):
            conn.execute(text(insert.format("NULL")))
        conn.execute(text(insert.format("'same'")))
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(text(insert.format("'same'")))
    assert rows(engine, "SELECT count(*) FROM queue") == [(4,)]


def test_sqlite_stores_the_small_hot_tables_by_their_keys(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'store.db'}")  # WITHOUT ROWID is SQLite's
    migrate_to(engine, "head")
    found = rows(
        engine,
        "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%WITHOUT ROWID%'",
    )
    engine.dispose()
    assert sorted(name for (name,) in found) == [
        "event_runs",
        "fences",
        "fifo_lanes",
        "fifo_members",
        "lanes",
        "run_keys",
        "slots",
    ]
