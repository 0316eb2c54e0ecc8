"""Migration 0018 on a store with FIFO lanes in it: idle lanes' rows go, busy lanes and their
lines stay, and a lane taken again after the upgrade gets a fence above every fence given
before it (the counter starts at the highest); going back keeps the busy lanes."""

from alembic import command
from sqlalchemy import Engine, text
from weir.platform.store.flow import fifo_lanes as fifo
from weir.platform.store.migrate import alembic_config

BUSY, IDLE, FRESH = "b" * 64, "i" * 64, "f" * 64
LANES = (
    "INSERT INTO fifo_lanes (lane, key, holder, fence, next_seq, scope, held_since, queued)"
    f" VALUES ('{BUSY}', 'busy', 'r1', 3, 2, 'fn:a', 7, 1),"
    f" ('{IDLE}', 'idle', NULL, 9, 0, 'fn:a', 5, 0)"
)
LINE = (
    "INSERT INTO fifo_members (lane, seq, run_id, start_at, payload)"
    f" VALUES ('{BUSY}', 1, 'r2', 8, '{{}}')"
)


def migrate(engine: Engine, revision: str, *, down: bool = False) -> None:
    config = alembic_config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        (command.downgrade if down else command.upgrade)(config, revision)


def rows(engine: Engine, sql: str) -> list[tuple[object, ...]]:
    with engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(sql))]


def joined_fence(engine: Engine, lane: str, run_id: str) -> int | None:
    with engine.begin() as conn:
        return fifo.join(conn, lane, "k", run_id, 0, {}).fence


def test_idle_lanes_go_busy_ones_stay_and_fences_only_go_up(engine: Engine) -> None:
    migrate(engine, "0017")
    with engine.begin() as conn:
        conn.execute(text(LANES))
        conn.execute(text(LINE))
    migrate(engine, "head")
    assert rows(engine, "SELECT lane, holder, fence, queued FROM fifo_lanes") == [
        (BUSY, "r1", 3, 1)
    ]
    assert rows(engine, "SELECT lane, seq, run_id FROM fifo_members") == [(BUSY, 1, "r2")]
    assert (joined_fence(engine, IDLE, "r3") or 0) > 9  # its old row held 9
    assert (joined_fence(engine, FRESH, "r4") or 0) > 9  # never seen: above all the same
    with engine.begin() as conn:
        handoff = fifo.leave(conn, BUSY, "r1")
    assert handoff is not None and handoff.run_id == "r2" and handoff.fence > 3


def test_going_back_keeps_the_busy_lanes_and_drops_the_counter(engine: Engine) -> None:
    migrate(engine, "0017")
    with engine.begin() as conn:
        conn.execute(text(LANES))
    migrate(engine, "head")
    migrate(engine, "0017", down=True)
    assert rows(engine, "SELECT lane, holder, fence FROM fifo_lanes") == [(BUSY, "r1", 3)]
    assert rows(engine, "SELECT count(*) FROM fences") == [(0,)]
    migrate(engine, "head")  # and up again: the counter starts from the busy lane's fence
    assert (joined_fence(engine, FRESH, "r5") or 0) > 3
