"""Flat growth: what one claim costs, and what the runs list and a run page cost, as the store
fills up. In-process, on SQLite (synchronous=FULL, as `weir dev`), no HTTP.

Claim curve: a backlog of N runs is stored (N sleeping, each with a timer item a day away, and
N queued behind a full concurrency key, in a parked lane), then a steady workload runs beside
it: a run's call is enqueued, claimed, and finished, one transaction each, as the platform
does. Reported per backlog size: CPU µs per cycle (this process's CPU time, which the fsyncs
and other work on a shared machine do not inflate; median of rounds), SQL statements per cycle
(they must not grow), and the ratio against the empty store measured in the same process.

Reads: with N runs stored, the runs list (newest first; one function; one status) and a run
page (`run_view`), in ms, and the query plans of the list queries (each must use an index,
never a scan of `runs`).

    .venv/bin/python bench/bench_growth.py [--sizes 0,1000,10000,100000] [--cycles 300]
"""

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from weir.platform.reads import runs as run_reads
from weir.platform.reads.runs import RunPage
from weir.platform.store import queue as q
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade

NOW = 1_800_000_000_000
DAY = 86_400_000
HOT_KEY = "k" * 64


def fill(db: Path, n: int) -> None:
    """N sleeping runs (timer items a day away) and N runs queued behind a full key."""
    conn = sqlite3.connect(db)
    run_rows, items = [], []
    for i in range(n):
        for kind, lane, due, status in (
            ("sleep", q.TIMER_LANE, NOW + DAY + i, "RUNNING"),
            ("exec", "Lhot", NOW - 1, "QUEUED"),
        ):
            run_id = f"{kind[0]}{i:025d}"
            created = NOW - 10 * DAY + i
            run_rows.append((run_id, "fn-bg", status, json.dumps([f"e{run_id}"]), created, lane))
            items.append((kind, run_id, "fn-bg", due, created, lane))
    conn.executemany(
        "INSERT INTO runs (id, function_id, status, event_ids, created_at, score, lane) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(r, f, s, e, c, c, la) for r, f, s, e, c, la in run_rows],
    )
    conn.executemany(
        "INSERT INTO queue (kind, run_id, function_id, available_at, score, lane, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(k, r, f, d, c, la, c) for k, r, f, d, c, la in items],
    )
    if n:
        conn.executemany(
            "INSERT INTO lanes (lane, next_at, head_score, blocked_on, limits) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (q.TIMER_LANE, NOW + DAY, NOW + DAY, None, "[]"),
                ("Lhot", NOW + DAY, NOW - 10 * DAY, HOT_KEY, json.dumps([[HOT_KEY, 1]])),
            ],
        )
        conn.execute(
            "INSERT INTO slots (key_hash, item_id, expires_at) VALUES (?, ?, ?)",
            (HOT_KEY, 0, NOW + 2 * DAY),
        )
    conn.commit()
    conn.close()


def cycle(engine: Engine, i: int) -> None:
    now = NOW + i
    item = q.NewItem(
        kind="exec", available_at=now, score=now, lane="fn", run_id=f"r{i}", function_id="fn"
    )
    with engine.begin() as conn:
        q.enqueue(conn, item)
    with engine.begin() as conn:
        claimed = q.claim(conn, now, 1, 30_000)
        q.next_due(conn)
    assert len(claimed) == 1 and claimed[0].run_id == f"r{i}", claimed
    with engine.begin() as conn:
        q.finish(conn, claimed[0], now)


def claim_curve(tmp: Path, n: int, cycles: int, rounds: int) -> tuple[float, float]:
    db = tmp / f"growth-{n}.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    fill(db, n)
    count = [0]
    event.listen(engine, "connect", lambda c, _r: c.set_trace_callback(lambda _s: _bump(count)))
    engine.dispose()
    times = []
    for r in range(rounds):
        start = time.process_time()
        for i in range(cycles):
            cycle(engine, r * cycles + i)
        times.append((time.process_time() - start) / cycles * 1e6)
    engine.dispose()
    return statistics.median(times), count[0] / (rounds * cycles)


def _bump(count: list[int]) -> None:
    count[0] += 1


def reads(tmp: Path, n: int, rounds: int) -> dict[str, Any]:
    engine = make_engine(f"sqlite:///{tmp / f'growth-{n}.db'}")
    pages = {
        "runs list, newest": RunPage(limit=50),
        "runs list, one function": RunPage(limit=50, function_id="fn-bg"),
        "runs list, one status": RunPage(limit=50, statuses=("QUEUED",)),
    }
    out: dict[str, Any] = {}
    with engine.connect() as conn:
        for label, page in pages.items():
            out[label] = _ms(lambda p=page: run_reads.run_listing(conn, p), rounds)  # type: ignore[misc]
        some = conn.exec_driver_sql("SELECT id FROM runs ORDER BY created_at LIMIT 1").scalar()
        out["run page"] = _ms(lambda: run_reads.run_view(conn, str(some)), rounds)
        out["plans"] = {label: _plan(engine, page) for label, page in pages.items()}
    engine.dispose()
    return out


def _ms(job: Any, rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        job()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _plan(engine: Engine, page: RunPage) -> str:
    """SQLite's plan of the list query, as the store issues it."""
    seen: list[str] = []

    def grab(_c: Any, _cur: Any, statement: str, params: Any, _ctx: Any, _many: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM runs" in statement:
            seen.append(statement)
            captured.append(params)

    captured: list[Any] = []
    event.listen(engine, "before_cursor_execute", grab)
    with engine.connect() as conn:
        run_reads.run_listing(conn, page)
        plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {seen[0]}", captured[0]).all()
    event.remove(engine, "before_cursor_execute", grab)
    return "; ".join(str(row[-1]) for row in plan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="0,1000,10000,100000")
    parser.add_argument("--cycles", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="weir-growth-") as name:
        tmp = Path(name)
        print("backlog (sleeping + parked runs)  CPU µs/cycle  SQL/cycle  vs empty")
        base = None
        for n in sizes:
            us, sql = claim_curve(tmp, n, args.cycles, args.rounds)
            base = base or us
            print(f"{n:>9,} + {n:<9,}             {us:13.0f} {sql:10.1f} {us / base:9.2f}")
        print("\nreads at N stored runs (ms, median)")
        for n in sizes:
            got = reads(tmp, n, 5)
            plans = got.pop("plans")
            print(f"{2 * n:>9,} runs: " + ", ".join(f"{k} {v:.2f}" for k, v in got.items()))
        for label, plan in plans.items():
            print(f"  plan, {label}: {plan}")


if __name__ == "__main__":
    main()
