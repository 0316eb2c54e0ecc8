"""Flat growth: what one queue item costs, and what the runs list and a run page cost, while a
backlog waits in the same store. In-process, on SQLite (synchronous=FULL, as `weir dev`), no
HTTP. Merges the former bench_backlog.py and bench_growth.py.

Claim cost: one item goes through enqueue, claim and finish (each its own transaction, as Weir
does them) beside 0, 1k, 10k and 100k waiting items of three kinds: runs sleeping (timers an
hour away), runs queued behind one full concurrency key (one hot lane), and runs each parked
on its own full key (many keyed lanes). The measured item runs in a lane of its own with a
concurrency key (limit 1,000), so finishing releases a slot and wakes parked lanes, as keyed
functions do. Per backlog: CPU µs per item (this process's CPU time, which fsyncs and other
work on a shared machine do not inflate), SQL statements per item (every statement SQLite ran,
counted by its trace callback: they must not grow), and the ratio to an empty store measured
alternately with it, round by round (a ratio near 1.0 at 100k: the backlog costs the hot path
nothing). Medians of the rounds.

Reads: with N sleeping and N parked runs stored, the runs list (newest first; one function;
one status) and a run page (`run_view`), in ms, and the query plans of the list queries (each
must use an index, never a scan of `runs`). At 1,000,000 runs over HTTP: bench_reads.py.

    .venv/bin/python bench/bench_backlog.py                     # 3 rounds, sizes 1k/10k/100k
    .venv/bin/python bench/bench_backlog.py --sizes 1000,10000  # quicker
    .venv/bin/python bench/bench_backlog.py --only claims       # or: --only reads
"""

import argparse
import json
import os
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, event
from weir.platform.reads import runs as run_reads
from weir.platform.reads.runs import RunPage
from weir.platform.store import queue as q
from weir.platform.store.database import make_engine
from weir.platform.store.migrate import upgrade

NOW = 1_767_268_800_000
HOUR = 3_600_000
DAY = 86_400_000
LEASE = 60_000
WORK_KEY = ("k-work", 1000)
BACKLOGS = ("sleeping", "hot lane", "keyed lanes")
HOT_KEY = "k" * 64

Limits = tuple[tuple[str, int], ...]


# -- claim cost beside a backlog ---------------------------------------------------------------


def item(lane: str, at: int, limits: Limits = (), kind: str = "exec") -> q.NewItem:
    return q.NewItem(kind=kind, available_at=at, score=at, lane=lane, run_id="r", limits=limits)


def fill(engine: Engine, kind: str, n: int) -> None:
    """`n` waiting items of one backlog kind, written in a few large transactions."""
    with engine.begin() as conn:
        if kind == "sleeping":
            for i in range(n):
                q.enqueue(conn, item(q.TIMER_LANE, NOW + HOUR + i, kind="sleep"))
        elif kind == "hot lane":
            _hold(conn, "hot", (("k-hot", 1),))
            for i in range(n):
                q.enqueue(conn, item("hot", NOW + i % 1000, (("k-hot", 1),)))
        else:
            for i in range(n):
                _hold(conn, f"user-{i}", ((f"k-{i}", 1),))
                q.enqueue(conn, item(f"user-{i}", NOW, ((f"k-{i}", 1),)))
    _settle(engine)


def _hold(conn: Connection, lane: str, limits: Limits) -> None:
    """A claimed item that keeps its key full for the whole bench (its holder never ends)."""
    q.enqueue(conn, item(lane, NOW - 1, limits))
    q.claim(conn, NOW - 1, 1, 10 * HOUR)


def _settle(engine: Engine) -> None:
    """Claim until nothing more is due now: the keyed lanes park on their full keys."""
    with engine.begin() as conn:
        while (due := q.next_due(conn)) is not None and due <= NOW:
            q.claim(conn, NOW, 500, 10 * HOUR)


class Counted:
    """A store whose SQL statements are counted (sqlite3's trace callback: every statement
    SQLite ran, BEGIN and COMMIT included)."""

    def __init__(self, db: Path) -> None:
        self.statements = 0
        self.engine = make_engine(f"sqlite:///{db}")
        event.listen(self.engine, "connect", lambda c, _r: c.set_trace_callback(self._bump))

    def _bump(self, _statement: str) -> None:
        self.statements += 1


def work(store: Counted, count: int, start: int) -> tuple[float, int]:
    """CPU seconds and SQL statements for `count` items through enqueue, claim and finish."""
    engine = store.engine
    sql0, t0 = store.statements, time.process_time()
    for i in range(count):
        now = NOW + 1 + start + i
        with engine.begin() as conn:
            q.enqueue(conn, item("work", now, (WORK_KEY,)))
        with engine.begin() as conn:
            claimed = q.claim(conn, now, 1, LEASE)
        assert len(claimed) == 1 and claimed[0].lane == "work", claimed
        with engine.begin() as conn:
            q.finish(conn, claimed[0], now)
    return time.process_time() - t0, store.statements - sql0


def store(tmp: Path, kind: str, n: int) -> Counted:
    db = tmp / f"{kind.replace(' ', '-')}-{n}.db"
    db.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    if n:
        fill(engine, kind, n)
    engine.dispose()
    return Counted(db)


def measure(tmp: Path, kind: str, n: int, count: int, rounds: int) -> dict[str, float]:
    """Medians: CPU µs and SQL statements per item with the backlog, per item on the empty
    store, and the ratio of the two CPU costs, round by round (alternately measured)."""
    empty, full = store(tmp, "empty", 0), store(tmp, kind, n)
    costs, base_costs, sqls, ratios = [], [], [], []
    for r in range(rounds):
        base, _ = work(empty, count, r * count)
        cost, sql = work(full, count, r * count)
        costs.append(cost / count * 1e6)
        base_costs.append(base / count * 1e6)
        sqls.append(sql / count)
        ratios.append(cost / base)
    empty.engine.dispose()
    full.engine.dispose()
    med = statistics.median
    return {"us": med(costs), "empty_us": med(base_costs), "sql": med(sqls), "ratio": med(ratios)}


def claims(tmp: Path, sizes: list[int], count: int, rounds: int) -> None:
    print("CPU µs and SQL statements per item (enqueue + claim + finish) beside a backlog")
    print(
        f"{'backlog':<14} {'size':>8} {'µs/item':>9} {'empty':>7} {'SQL/item':>9} {'vs empty':>9}"
    )
    for kind in BACKLOGS:
        for n in sizes:
            got = measure(tmp, kind, n, count, rounds)
            print(
                f"{kind:<14} {n:>8,} {got['us']:>9.0f} {got['empty_us']:>7.0f} "
                f"{got['sql']:>9.1f} {got['ratio']:>8.2f}x",
                flush=True,
            )


# -- reads as the store fills ------------------------------------------------------------------


def fill_runs(db: Path, n: int) -> None:
    """N sleeping runs (timer items a day away) and N runs queued behind a full key, with
    their run rows, written straight into the tables."""
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


def read_costs(tmp: Path, n: int, repeats: int) -> dict[str, Any]:
    db = tmp / f"reads-{n}.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade(engine)
    fill_runs(db, n)
    pages = {
        "runs list, newest": RunPage(limit=50),
        "runs list, one function": RunPage(limit=50, function_id="fn-bg"),
        "runs list, one status": RunPage(limit=50, statuses=("QUEUED",)),
    }
    out: dict[str, Any] = {}
    with engine.connect() as conn:
        for label, page in pages.items():
            out[label] = _ms(lambda p=page: run_reads.run_listing(conn, p, NOW), repeats)  # type: ignore[misc]
        some = conn.exec_driver_sql("SELECT id FROM runs ORDER BY created_at LIMIT 1").scalar()
        if some is not None:  # the oldest run's page
            out["run page"] = _ms(lambda: run_reads.run_view(conn, str(some), NOW, {}), repeats)
        out["plans"] = {label: _plan(engine, page) for label, page in pages.items()}
    engine.dispose()
    return out


def _ms(job: Any, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        job()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def _plan(engine: Engine, page: RunPage) -> str:
    """SQLite's plan of the list query, as the store issues it."""
    seen: list[str] = []
    captured: list[Any] = []

    def grab(_c: Any, _cur: Any, statement: str, params: Any, _ctx: Any, _many: bool) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "FROM runs" in statement:
            seen.append(statement)
            captured.append(params)

    event.listen(engine, "before_cursor_execute", grab)
    with engine.connect() as conn:
        run_reads.run_listing(conn, page)
        plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {seen[0]}", captured[0]).all()
    event.remove(engine, "before_cursor_execute", grab)
    return "; ".join(str(row[-1]) for row in plan)


def reads(tmp: Path, sizes: list[int]) -> None:
    print("\nreads with N sleeping + N parked runs stored (ms, median of 5)")
    plans: dict[str, str] = {}
    for n in [0, *sizes]:
        got = read_costs(tmp, n, 5)
        plans = got.pop("plans")
        print(f"{2 * n:>9,} runs: " + ", ".join(f"{k} {v:.2f}" for k, v in got.items()))
    for label, plan in plans.items():
        print(f"  plan, {label}: {plan}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--items", type=int, default=500, help="items measured per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", choices=("claims", "reads"), help="one half of the bench")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"load: {os.getloadavg()} (1, 5, 15 min)")
    with tempfile.TemporaryDirectory(prefix="weir-bench-backlog-") as name:
        if args.only != "reads":
            claims(Path(name), sizes, args.items, args.rounds)
        if args.only != "claims":
            reads(Path(name), sizes)
    print(f"load: {os.getloadavg()} (1, 5, 15 min)")


if __name__ == "__main__":
    main()
